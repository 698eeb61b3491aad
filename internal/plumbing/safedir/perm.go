package safedir

import (
	"errors"
	"io/fs"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Permissions. A shared tree is shared through a group, and its files are
// changed only by being replaced or removed, which the folder's
// permissions govern, never in place: so a file is created writable by
// its owner alone (at most FilePerm, whatever the caller asks and
// whatever the umask), and no other account of the group can edit what
// one account wrote. Folders are made with at most DirPerm before the
// umask; nothing is ever world-writable.
const (
	FilePerm fs.FileMode = 0o644
	DirPerm  fs.FileMode = 0o775
)

// sharedPerm drops the group- and world-write bits from perm.
func sharedPerm(perm fs.FileMode) fs.FileMode { return perm.Perm() &^ 0o022 }

// MkdirAll creates path and any missing parents with DirPerm (before
// umask). No symbolic link is followed in any component of path: a link
// gives an error that wraps [ErrSymlink], and nothing is created through it.
// A folder created inside a set-group-ID folder (the shared-group layout
// that `collab init --group` makes) keeps the bit, as Linux does by itself,
// is also made group-writable whatever the umask, so every member of the
// group can add files to it, and takes the sticky bit from its parent
// (Linux does not), so that in a tree whose folders are sticky no member
// can rename or remove another's files in a folder made later (a new
// channel, a new agent's claims).
func MkdirAll(path string) error {
	fd, err := openDir(path, pathFlags)
	if errors.Is(err, fs.ErrNotExist) {
		// Each missing folder is made relative to its parent's descriptor.
		fd, err = walk(path, pathFlags, true)
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && pe.Op == "open" {
			pe.Op = "mkdir"
		}
		return err
	}
	return unix.Close(fd)
}

// DefaultOrphanAge is how old a temp file must be before RemoveOrphans
// removes it. A writer holds its temp file for milliseconds; 36 hours
// (Maildir's tmp/ rule) leaves room for any clock skew between hosts and
// for a host that was suspended mid-write.
const DefaultOrphanAge = 36 * time.Hour

// IsTemp reports whether name is one of the temp files this package
// writes (".NAME.RANDOM.tmp").
func IsTemp(name string) bool {
	return len(name) > len("..tmp") && name[0] == '.' && strings.HasSuffix(name, ".tmp")
}

// RemoveOrphans removes the temp files in the directory whose modification
// time is older than age before now: temp files left by writers that
// crashed mid-write. Newer ones may belong to a write in progress on any
// host and are left alone. It returns the names removed; a file that
// vanished meanwhile is not an error.
func (d *Dir) RemoveOrphans(age time.Duration, now time.Time) ([]string, error) {
	ents, err := d.ReadDir()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if !IsTemp(name) || !e.Type().IsRegular() {
			continue
		}
		fi, err := d.Lstat(name)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if now.Sub(fi.ModTime()) < age {
			continue
		}
		if err := d.Remove(name); err != nil {
			// Another account's temp file in a sticky folder is its
			// writer's to remove (its own janitor does).
			if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
				errs = append(errs, err)
			}
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// EachFile calls fn with the folder at path open and the name of each of
// its entries that ends in suffix and is not a temp file, in listing
// order: the loop of every "folder of records" reader. A missing folder
// has no entries (nil error).
func EachFile(path, suffix string, fn func(d *Dir, name string)) error {
	d, err := Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	ents, err := d.ReadDir()
	if err != nil {
		return err
	}
	for _, e := range ents {
		if name := e.Name(); strings.HasSuffix(name, suffix) && !IsTemp(name) {
			fn(d, name)
		}
	}
	return nil
}
