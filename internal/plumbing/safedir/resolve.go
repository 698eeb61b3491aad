package safedir

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Directory paths are resolved with no symbolic link followed in any
// component: openat2(2) with RESOLVE_NO_SYMLINKS, or, where the kernel has
// no openat2 (before 5.6, or a seccomp filter that refuses it), a walk that
// opens one component at a time relative to the previous one with
// O_NOFOLLOW.

// noOpenat2 is set once openat2(2) turns out to be unsupported.
var noOpenat2 atomic.Bool

const (
	dirFlags  = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	pathFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
)

// openDir opens the directory at path with flags (dirFlags or pathFlags)
// and no symbolic link followed anywhere in path. A link gives an error
// that wraps ErrSymlink and names it.
func openDir(path string, flags int) (int, error) {
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		for {
			fd, err := unix.Openat2(unix.AT_FDCWD, path, &how)
			switch err {
			case nil:
				return fd, nil
			case unix.EINTR, unix.EAGAIN:
				continue
			case unix.ELOOP, unix.ENOTDIR:
				// ELOOP: a link on the way; ENOTDIR: perhaps the last
				// element is one (O_NOFOLLOW|O_DIRECTORY).
				if link := firstLink(path); link != "" || err == unix.ELOOP {
					return -1, symlinkErr("open", path, link)
				}
				return -1, pathErr("open", path, err)
			case unix.ENOSYS:
				noOpenat2.Store(true)
			case unix.EPERM:
				// Perhaps a seccomp filter; the walk tells.
			default:
				return -1, pathErr("open", path, err)
			}
			break
		}
	}
	return walk(path, flags, false)
}

// walk opens the directory at path one component at a time, each relative
// to the one before with O_NOFOLLOW, and returns the last opened with
// flags. With create, missing components are made as MkdirAll makes them.
func walk(path string, flags int, create bool) (int, error) {
	path = filepath.Clean(path)
	dirfd, at, rest := unix.AT_FDCWD, "", path
	if filepath.IsAbs(path) {
		fd, err := openat(unix.AT_FDCWD, "/", pathFlags)
		if err != nil {
			return -1, pathErr("open", "/", err)
		}
		dirfd, at, rest = fd, "/", path[1:]
	}
	defer func() {
		if dirfd != unix.AT_FDCWD {
			unix.Close(dirfd)
		}
	}()
	if rest == "" { // path is "/"
		return openat(dirfd, ".", flags)
	}
	elems := strings.Split(rest, "/")
	for i, name := range elems {
		at = filepath.Join(at, name)
		fl := pathFlags
		if i == len(elems)-1 {
			fl = flags
		}
		fd, err := openat(dirfd, name, fl)
		if err == unix.ENOENT && create {
			if err = mkdirat(dirfd, name, at); err != nil {
				return -1, err
			}
			fd, err = openat(dirfd, name, fl)
		}
		if err == unix.ENOTDIR || err == unix.ELOOP {
			var st unix.Stat_t
			if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return -1, pathErr("open", at, ErrSymlink)
			}
		}
		if err != nil {
			return -1, pathErr("open", at, err)
		}
		if dirfd != unix.AT_FDCWD {
			unix.Close(dirfd)
		}
		dirfd = fd
	}
	fd := dirfd
	dirfd = unix.AT_FDCWD // returned, not closed
	return fd, nil
}

func openat(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// mkdirat makes the folder name (at, for errors) in dirfd with DirPerm. In
// a set-group-ID folder it is also made group-writable and set-group-ID,
// and sticky when its parent is (see MkdirAll). A folder that another process made meanwhile is fine.
func mkdirat(dirfd int, name, at string) error {
	err := unix.Mkdirat(dirfd, name, uint32(DirPerm))
	if err == unix.EEXIST {
		return nil
	}
	if err != nil {
		return pathErr("mkdir", at, err)
	}
	var pst unix.Stat_t
	if unix.Fstat(dirfd, &pst) != nil || pst.Mode&unix.S_ISGID == 0 {
		return nil
	}
	fd, err := openat(dirfd, name, dirFlags)
	if err != nil {
		if err == unix.ELOOP || err == unix.ENOTDIR {
			return pathErr("mkdir", at, ErrSymlink) // replaced meanwhile
		}
		return pathErr("mkdir", at, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return pathErr("mkdir", at, err)
	}
	have := st.Mode & (0o777 | unix.S_ISGID | unix.S_ISVTX)
	want := have | 0o070 | unix.S_ISGID
	if pst.Mode&unix.S_ISVTX != 0 {
		want |= unix.S_ISVTX
	}
	if want != have {
		if err := unix.Fchmod(fd, want); err != nil {
			return fmt.Errorf("make %s group-writable: %w", at, err)
		}
	}
	return nil
}

// firstLink returns the first component of path, from the root down, that
// is a symbolic link, or "" if none is (any more).
func firstLink(path string) string {
	link := ""
	for p := filepath.Clean(path); ; {
		if fi, err := lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			link = p // keep going up: the first link from the root wins
		}
		parent := filepath.Dir(p)
		if parent == p {
			return link
		}
		p = parent
	}
}

// symlinkErr is the error for a path with the symbolic link link in it
// (found with firstLink; "": unknown, say because it was replaced since).
func symlinkErr(op, path, link string) error {
	if link == "" || link == filepath.Clean(path) {
		return pathErr(op, path, ErrSymlink)
	}
	return pathErr(op, path, fmt.Errorf("%w: %s", ErrSymlink, link))
}

func lstat(path string) (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return nil, err
	}
	return newFileInfo(filepath.Base(path), &st), nil
}

// fileInfo is the fs.FileInfo of a unix.Stat_t.
type fileInfo struct {
	name string
	st   unix.Stat_t
}

func newFileInfo(name string, st *unix.Stat_t) *fileInfo { return &fileInfo{name: name, st: *st} }

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.st.Size }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }
func (fi *fileInfo) IsDir() bool        { return fi.Mode().IsDir() }

// Sys returns the *unix.Stat_t.
func (fi *fileInfo) Sys() any { return &fi.st }

func (fi *fileInfo) Mode() fs.FileMode {
	m := fs.FileMode(fi.st.Mode & 0o777)
	switch fi.st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if fi.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if fi.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if fi.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
