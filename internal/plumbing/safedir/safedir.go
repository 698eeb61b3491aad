// Package safedir does the file operations collab needs inside one directory
// of the shared tree, in the ways that are safe when several hosts share that
// directory over NFS.
//
// # Contract
//
//   - Names are single path elements; a name with a '/' or one of "", ".",
//     ".." is refused. Symlinks are never followed: opening one fails with
//     [ErrSymlink].
//   - Nor is a symlink followed in any component of a directory's path:
//     [Open], [Create], [MkdirAll] and the listings resolve it with
//     openat2(2) RESOLVE_NO_SYMLINKS (before Linux 5.6, one component at a
//     time with O_NOFOLLOW) and refuse a link anywhere with [ErrSymlink];
//     missing folders are made relative to their parent's descriptor. So a
//     path whose root has been made link-free (tree.Resolve does) cannot be
//     taken out of the tree by a link planted in it.
//   - [Dir.Publish] makes a new file appear whole or not at all and never
//     replaces an existing one: a dot-prefixed temp file is created with
//     O_EXCL, written, fsynced and closed, hard-linked to the final name
//     (renameat2 RENAME_NOREPLACE where the filesystem has no hard links), the
//     directory is fsynced and the temp name removed. A clash is reported as
//     an error that wraps [fs.ErrExist].
//   - [Dir.Replace] atomically replaces a file (temp, fsync, rename, directory
//     fsync), for files that are rewritten such as presence heartbeats.
//   - [Dir.ReadFile] reads only regular files no larger than a limit.
//   - No file is created writable by its group or others, whatever the
//     umask ([FilePerm]): files are replaced, never edited by another
//     account. Folders in a shared tree are group-writable and sticky
//     ([MkdirAll]); an account's private folder is writable by it alone
//     ([CreatePrivate]), and what is read from it is checked ([CheckOwn]).
//   - [Dir.RemoveOrphans] removes temp files left by crashed writers, only
//     once they are older than an age (36 h by default).
//
// Temp files are named ".NAME.RANDOM.tmp"; readers of the tree ignore every
// dot-file. A writer removes its temp file on every failure it survives; one
// left by a crash is harmless and may be removed by age.
//
// # NFS notes
//
// fsync is called before close so that write errors surface (NFS may defer
// them to close otherwise). link(2) on NFS can report EEXIST for a link it
// made when a reply was lost and the request retransmitted; Publish then
// compares the two names' inodes and reports success when they are one file.
package safedir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/internal/plumbing/randhex"
)

var (
	// ErrSymlink is returned when a name, or any folder on a path opened
	// or created, is a symbolic link.
	ErrSymlink = errors.New("safedir: symbolic link")
	// ErrNotRegular is returned when a name is not a regular file.
	ErrNotRegular = errors.New("safedir: not a regular file")
	// ErrTooLarge is returned when a file is larger than the read limit.
	ErrTooLarge = errors.New("safedir: file too large")
	// ErrBadName is returned for a name that is not a single path element.
	ErrBadName = errors.New("safedir: bad file name")
)

// Dir is an open directory. It is safe for concurrent use.
type Dir struct {
	f    *os.File
	path string
}

// Open opens the existing directory at path. No component of path may be
// a symbolic link ([ErrSymlink], naming the link): a folder of the tree
// replaced by a link cannot redirect collab's writes elsewhere. Paths built
// from tree.Resolve's root have no other link in them (it resolves the
// root's own links).
func Open(path string) (*Dir, error) {
	fd, err := openDir(path, dirFlags)
	if err != nil {
		return nil, err
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), path: path}, nil
}

// Create opens the directory at path, creating it and its parents with
// [MkdirAll] when missing.
func Create(path string) (*Dir, error) {
	if err := MkdirAll(path); err != nil {
		return nil, err
	}
	return Open(path)
}

// Path returns the path the directory was opened with.
func (d *Dir) Path() string { return d.path }

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

// Stat returns the file info of the directory itself.
func (d *Dir) Stat() (fs.FileInfo, error) { return d.f.Stat() }

// Chmod changes the directory's mode (permissions, set-group-ID, sticky).
func (d *Dir) Chmod(mode fs.FileMode) error { return d.f.Chmod(mode) }

// Chown changes the directory's owner and group; -1 keeps one as it is.
func (d *Dir) Chown(uid, gid int) error { return d.f.Chown(uid, gid) }

func (d *Dir) fd() int { return int(d.f.Fd()) }

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%w: %q", ErrBadName, name)
	}
	return nil
}

func pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// ReadDir lists the directory's entries, unsorted. The type of each entry
// comes from the directory listing itself (no stat).
func (d *Dir) ReadDir() ([]fs.DirEntry, error) {
	f, err := d.reopen()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// reopen opens the directory's path afresh, with no symlink followed: on
// NFS this revalidates the directory, and a listing never continues from
// an old offset.
func (d *Dir) reopen() (*os.File, error) {
	fd, err := openDir(d.path, dirFlags)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), d.path), nil
}

// ReadDirBatches calls fn with the directory's entries, unsorted, at most n
// at a time (n ≤ 0: 512), so that a folder of 100,000 entries is never
// held in memory whole. The entries passed to fn are not reused. It stops
// at fn's first error and returns it.
func (d *Dir) ReadDirBatches(n int, fn func([]fs.DirEntry) error) error {
	if n <= 0 {
		n = 512
	}
	f, err := d.reopen()
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		ents, err := f.ReadDir(n)
		if len(ents) > 0 {
			if ferr := fn(ents); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Stamp is what changes in a directory's attributes when an entry is added
// or removed. Equal stamps mean "probably unchanged": a change within one
// timestamp tick keeps the stamp.
type Stamp struct {
	Mtime, Ctime int64 // nanoseconds
	Ino          uint64
	Size         int64
	Nlink        uint64
}

// noStatx is set once statx(2) with AT_STATX_FORCE_SYNC turns out to be
// unsupported (kernels before 4.11, some seccomp filters).
var noStatx atomic.Bool

// Stamp returns the directory's stamp, asked of the file server itself:
// statx(2) with AT_STATX_FORCE_SYNC makes NFS and FUSE revalidate the
// attributes instead of answering from their attribute cache (which can be
// a minute old on NFS), so a change made on another host shows at once.
// Where statx is unsupported it falls back to fstat on the open descriptor
// (on NFS, opening revalidates: close-to-open).
func (d *Dir) Stamp() (Stamp, error) {
	if !noStatx.Load() {
		var sx unix.Statx_t
		var err error = unix.EINTR
		for err == unix.EINTR {
			err = unix.Statx(d.fd(), "", unix.AT_EMPTY_PATH|unix.AT_STATX_FORCE_SYNC, unix.STATX_BASIC_STATS, &sx)
		}
		switch err {
		case nil:
			return Stamp{
				Mtime: sx.Mtime.Sec*1e9 + int64(sx.Mtime.Nsec), Ctime: sx.Ctime.Sec*1e9 + int64(sx.Ctime.Nsec),
				Ino: sx.Ino, Size: int64(sx.Size), Nlink: uint64(sx.Nlink),
			}, nil
		case unix.ENOSYS, unix.EINVAL, unix.EPERM, unix.EOPNOTSUPP:
			noStatx.Store(true)
		default:
			return Stamp{}, pathErr("statx", d.path, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(d.fd(), &st); err != nil {
		return Stamp{}, pathErr("stat", d.path, err)
	}
	return Stamp{
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(),
		Ino: st.Ino, Size: st.Size, Nlink: uint64(st.Nlink),
	}, nil
}

// Lstat returns the file info of name without following a symlink.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	for {
		err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			return newFileInfo(name, &st), nil
		}
		if err != unix.EINTR {
			return nil, pathErr("lstat", name, err)
		}
	}
}

// OpenAppend opens the file name for appending, creating it with at most
// perm (never world-writable) if missing. A symlink gives [ErrSymlink].
func (d *Dir) OpenAppend(name string, perm fs.FileMode) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	return d.open(name, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT, sharedPerm(perm))
}

// ErrReplaced is returned by [Dir.OpenRoot] when the directory's path no
// longer leads to the open directory.
var ErrReplaced = errors.New("safedir: folder replaced while being opened")

// OpenRoot returns an [os.Root] on the directory, for callers that work in
// its subfolders: os.Root follows no link out of it. The path is opened
// again and checked to be this very directory, so a link put in its place
// since [Open] is refused ([ErrReplaced]).
func (d *Dir) OpenRoot() (*os.Root, error) {
	r, err := os.OpenRoot(d.path)
	if err != nil {
		return nil, err
	}
	rfi, err := r.Stat(".")
	if err != nil {
		r.Close()
		return nil, err
	}
	dfi, err := d.f.Stat()
	if err != nil {
		r.Close()
		return nil, err
	}
	if !os.SameFile(rfi, dfi) {
		r.Close()
		return nil, pathErr("open", d.path, ErrReplaced)
	}
	return r, nil
}

// open opens name with O_NOFOLLOW. A symlink gives ErrSymlink.
func (d *Dir) open(name string, flags int, perm fs.FileMode) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Openat(d.fd(), name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.ELOOP {
		return nil, pathErr("open", name, ErrSymlink)
	}
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// ReadFile reads the regular file name if it is at most limit bytes.
func (d *Dir) ReadFile(name string, limit int64) ([]byte, fs.FileInfo, error) {
	if err := checkName(name); err != nil {
		return nil, nil, err
	}
	// O_NONBLOCK: a FIFO named like a message must not hang the reader.
	f, err := d.open(name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, pathErr("read", name, ErrNotRegular)
	}
	if fi.Size() > limit {
		return nil, fi, pathErr("read", name, ErrTooLarge)
	}
	// Sized to the file (and one byte more, to see it end), not grown.
	data := make([]byte, 0, fi.Size()+1)
	for int64(len(data)) <= limit {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // it grew since the stat
		}
		n, err := f.Read(data[len(data):min(int64(cap(data)), limit+1)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fi, pathErr("read", name, err)
		}
	}
	if int64(len(data)) > limit {
		return nil, fi, pathErr("read", name, ErrTooLarge)
	}
	return data, fi, nil
}

// OpenRead opens the regular file name for reading, if it is at most limit
// bytes, as ReadFile reads it: for a caller that needs only its start.
func (d *Dir) OpenRead(name string, limit int64) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	f, err := d.open(name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = pathErr("read", name, ErrNotRegular)
	case fi.Size() > limit:
		err = pathErr("read", name, ErrTooLarge)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Publish creates name with data, atomically and without ever replacing an
// existing file. If name exists, the error wraps fs.ErrExist and nothing is
// changed.
func (d *Dir) Publish(name string, data []byte, perm fs.FileMode) error {
	return d.publish(name, data, perm, true)
}

// PublishUnsynced is Publish without the folder's fsync: the file's data
// is durable and the name in place when it returns, but the name may not
// survive a crash until [Dir.Sync] returns. It is for a writer that
// publishes many files at once and writes again, after a crash, whatever
// it had not seen synced (the remote mirror: its position is saved only
// after Sync), at the cost of one folder fsync instead of one per file.
func (d *Dir) PublishUnsynced(name string, data []byte, perm fs.FileMode) error {
	return d.publish(name, data, perm, false)
}

func (d *Dir) publish(name string, data []byte, perm fs.FileMode, sync bool) error {
	if err := checkName(name); err != nil {
		return err
	}
	tmp, err := d.writeTemp(name, data, perm)
	if err != nil {
		return err
	}
	defer unix.Unlinkat(d.fd(), tmp, 0)
	if err := d.linkNoReplace(tmp, name); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	// Make the new name durable before the temp name goes (mpop#8: a crash
	// must not persist the unlink without the link).
	return d.sync()
}

// Sync makes the folder's entries durable (fsync of the folder; a
// filesystem that cannot sync a folder is taken as having done it).
func (d *Dir) Sync() error { return d.sync() }

func (d *Dir) linkNoReplace(tmp, name string) error {
	err := unix.Linkat(d.fd(), tmp, d.fd(), name, 0)
	switch err {
	case nil:
		return nil
	case unix.EEXIST:
		if d.sameFile(tmp, name) {
			return nil // the link was made; its reply was lost (link(2) BUGS)
		}
		return pathErr("publish", name, fs.ErrExist)
	case unix.EPERM, unix.ENOTSUP, unix.EMLINK, unix.ENOSYS:
		// No hard links here (some FUSE and SMB mounts): rename without replace.
		err = renameNoReplace(d.fd(), tmp, name)
		if err == unix.EEXIST {
			return pathErr("publish", name, fs.ErrExist)
		}
		if err != nil {
			return pathErr("publish", name, err)
		}
		return nil
	default:
		return pathErr("publish", name, err)
	}
}

func (d *Dir) sameFile(a, b string) bool {
	var sa, sb unix.Stat_t
	if unix.Fstatat(d.fd(), a, &sa, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		unix.Fstatat(d.fd(), b, &sb, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// Replace atomically replaces name with data (or creates it).
func (d *Dir) Replace(name string, data []byte, perm fs.FileMode) error {
	if err := checkName(name); err != nil {
		return err
	}
	tmp, err := d.writeTemp(name, data, perm)
	if err != nil {
		return err
	}
	if err := unix.Renameat(d.fd(), tmp, d.fd(), name); err != nil {
		unix.Unlinkat(d.fd(), tmp, 0)
		return pathErr("replace", name, err)
	}
	return d.sync()
}

// Rename renames from to to within the directory, replacing to if it
// exists. Of several processes renaming the same name, one succeeds and the
// others get an error that wraps fs.ErrNotExist.
func (d *Dir) Rename(from, to string) error {
	if err := errors.Join(checkName(from), checkName(to)); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd(), from, d.fd(), to); err != nil {
		return pathErr("rename", from, err)
	}
	return d.sync()
}

// Link makes to a second name of from, never replacing an existing to: a
// clash gives an error that wraps fs.ErrExist.
func (d *Dir) Link(from, to string) error {
	if err := errors.Join(checkName(from), checkName(to)); err != nil {
		return err
	}
	if err := d.linkNoReplace(from, to); err != nil {
		return err
	}
	return d.sync()
}

// MoveTo moves name into the directory dst under the same name, never
// replacing a file there: it links, fsyncs dst, then removes name here. If
// dst already holds this very file (an earlier move cut short), the old
// name is simply removed; if it holds another file, the error wraps
// fs.ErrExist and nothing changes.
func (d *Dir) MoveTo(name string, dst *Dir) error {
	if err := checkName(name); err != nil {
		return err
	}
	err := unix.Linkat(d.fd(), name, dst.fd(), name, 0)
	if err == unix.EEXIST {
		var a, b unix.Stat_t
		if unix.Fstatat(d.fd(), name, &a, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			unix.Fstatat(dst.fd(), name, &b, unix.AT_SYMLINK_NOFOLLOW) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
			return pathErr("move", name, fs.ErrExist)
		}
		err = nil
	}
	if err != nil {
		return pathErr("move", name, err)
	}
	if err := dst.sync(); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd(), name, 0); err != nil {
		return pathErr("move", name, err)
	}
	return d.sync()
}

// Remove removes name (not a directory).
func (d *Dir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd(), name, 0); err != nil {
		return pathErr("remove", name, err)
	}
	return nil
}

// writeTemp writes data to a new dot-prefixed temp file, fsyncs and closes
// it, and returns its name. On failure nothing is left behind.
func (d *Dir) writeTemp(name string, data []byte, perm fs.FileMode) (tmp string, err error) {
	var f *os.File
	for range 10 {
		tmp = "." + name + "." + randhex.String(4) + ".tmp"
		f, err = d.open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, sharedPerm(perm))
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", err
	}
	// The failure paths below return "", so the named result tmp is empty
	// by the time a deferred call runs: remove the name kept here.
	created := tmp
	defer func() {
		if err != nil {
			unix.Unlinkat(d.fd(), created, 0)
		}
	}()
	if _, err = f.Write(data); err != nil {
		f.Close()
		return "", err
	}
	// fsync before close: NFS may report write errors only here. A failed
	// fsync is never retried on the same file (fsyncgate); the caller
	// writes a new temp file.
	if err = f.Sync(); err != nil {
		f.Close()
		return "", err
	}
	if err = f.Close(); err != nil {
		return "", err
	}
	return tmp, nil
}

// sync fsyncs the directory. Filesystems that cannot fsync a directory
// (EINVAL, as CIFS) are accepted, as Dovecot does.
func (d *Dir) sync() error {
	err := d.f.Sync()
	if err != nil && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EBADF) || errors.Is(err, unix.ENOTSUP)) {
		return nil
	}
	return err
}
