package safedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNotPrivate is wrapped by [CreatePrivate] and [CheckOwn] when a folder
// or file that only this process's account may write could have been
// written by another account.
var ErrNotPrivate = errors.New("safedir: writable by another account")

// CreatePrivate opens the folder at path, an account's private folder in
// a shared tree (a watcher's state), making it and any missing parents as
// [MkdirAll] does when it is missing. The folder itself is made writable
// by its owner alone (mode 0755, set-group-ID where its parent is, so its
// files still belong to the tree's group for reading). It must be owned
// by this process's account: one owned by anyone else is refused with an
// error wrapping [ErrNotPrivate] that names its owner and mode, since its
// owner could put files in it or take them out. One this account owns
// but left writable by its group (made before collab kept it private) has
// the group's write taken away, and whatever it holds must still pass
// [CheckOwn] as each file is read.
func CreatePrivate(path string) (*Dir, error) {
	if err := MkdirAll(path); err != nil {
		return nil, err
	}
	return OpenPrivate(path)
}

// OpenPrivate opens the existing private folder at path (see
// [CreatePrivate]) and checks it as CreatePrivate does.
func OpenPrivate(path string) (*Dir, error) {
	d, err := Open(path)
	if err != nil {
		return nil, err
	}
	if err := d.makePrivate(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *Dir) makePrivate() error {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd(), &st); err != nil {
		return pathErr("stat", d.path, err)
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return fmt.Errorf("%s is owned by uid %d, not by this account (uid %d), so that account could change what is in it: %w; "+
			"check what it holds, then remove it (as its owner or root) and let this account make it again",
			d.path, st.Uid, euid, ErrNotPrivate)
	}
	if st.Mode&0o022 != 0 {
		if err := unix.Fchmod(d.fd(), st.Mode&(0o7777&^0o022)); err != nil {
			return pathErr("chmod", d.path, err)
		}
	}
	return nil
}

// CheckOwn reports whether the file fi (as [Dir.ReadFile] gives it, from
// the open file) could have been written only by this process's account:
// owned by it, writable by no group and no other account, and with one
// link (a hard link made by another account to one of this account's
// files is not a file this account wrote there). The error wraps
// [ErrNotPrivate] and names path, the owner and the mode.
func CheckOwn(path string, fi fs.FileInfo) error {
	uid, nlink, ok := Ownership(fi)
	if !ok {
		return nil
	}
	euid := os.Geteuid()
	switch {
	case uid != euid:
		return fmt.Errorf("%s is owned by uid %d, not by this account (uid %d): %w", path, uid, euid, ErrNotPrivate)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s (mode %v) is writable by its group or others, so another account could have changed it: %w", path, fi.Mode(), ErrNotPrivate)
	case nlink > 1:
		return fmt.Errorf("%s has %d links: %w", path, nlink, ErrNotPrivate)
	}
	return nil
}

// Ownership returns the owner and link count of fi, from os.Stat or from
// this package's Lstat; ok is false where fi carries neither.
func Ownership(fi fs.FileInfo) (uid int, nlink uint64, ok bool) {
	switch st := fi.Sys().(type) {
	case *syscall.Stat_t:
		return int(st.Uid), uint64(st.Nlink), true
	case *unix.Stat_t:
		return int(st.Uid), uint64(st.Nlink), true
	}
	return 0, 0, false
}

// CreateDropbox opens the folder at path, made as [MkdirAll] makes it,
// inside an account's private folder: a folder where the other accounts of
// the tree's group may add files (a request to the folder's owner, such
// as a job's kill request) but, being sticky, may not rename, replace or
// remove any file they do not own. The sticky bit is set when the folder
// is writable by its group and this account owns it.
func CreateDropbox(path string) (*Dir, error) {
	d, err := Create(path)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(d.fd(), &st); err != nil {
		d.Close()
		return nil, pathErr("stat", path, err)
	}
	if st.Mode&0o020 != 0 && st.Mode&unix.S_ISVTX == 0 && int(st.Uid) == os.Geteuid() {
		if err := unix.Fchmod(d.fd(), (st.Mode&0o7777)|unix.S_ISVTX); err != nil {
			d.Close()
			return nil, pathErr("chmod", path, err)
		}
	}
	return d, nil
}
