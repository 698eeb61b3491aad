package documents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/internal/plumbing/randhex"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Defaults of [Options].
const (
	DefaultMaxSize   = 4 << 20
	DefaultLockStale = 30 * time.Second
	DefaultLockWait  = 2 * time.Minute
)

var (
	// ErrConflict is returned when a document is not at the version a
	// write expected.
	ErrConflict = errors.New("documents: version conflict")
	// ErrTooLarge is returned for a document larger than the size limit.
	ErrTooLarge = errors.New("documents: document too large")
	// ErrNotRegular is returned when a path names a folder or a special file.
	ErrNotRegular = errors.New("documents: not a regular file")
	// ErrLockBusy is returned when a document's lock stays held by a live
	// writer for longer than [Options.LockWait].
	ErrLockBusy = errors.New("documents: document is locked")
	// ErrLockLost is returned when a writer's lock was taken over before it
	// committed; nothing was written.
	ErrLockLost = errors.New("documents: lock taken over by another writer")
	// ErrSymlink is returned when a path goes through a symbolic link in
	// the folder: no link is followed below ROOT, to read as to write.
	ErrSymlink = errors.New("documents: a symbolic link")
)

// Options tune a Folder; zero fields take defaults.
type Options struct {
	MaxSize   int64         // largest document; default DefaultMaxSize
	LockStale time.Duration // age at which a lock is taken over; default DefaultLockStale
	LockWait  time.Duration // how long to wait for a live lock; default DefaultLockWait
	Host      string        // written into lock files; default os.Hostname
}

// Folder is the documents of one channel. It holds no open files and is
// safe for concurrent use.
type Folder struct {
	dir     string
	channel string
	opt     Options
}

// Doc is a document as read.
type Doc struct {
	File     string    `json:"file"`
	Content  string    `json:"content"`
	Version  string    `json:"version"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// Entry is a document in a listing.
type Entry struct {
	File     string    `json:"file"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// New returns the documents of channel.
func New(root tree.Root, channel string, opt Options) (*Folder, error) {
	if err := tree.CheckName("channel", channel); err != nil {
		return nil, err
	}
	if opt.MaxSize <= 0 {
		opt.MaxSize = DefaultMaxSize
	}
	if opt.LockStale <= 0 {
		opt.LockStale = DefaultLockStale
	}
	if opt.LockWait <= 0 {
		opt.LockWait = DefaultLockWait
	}
	if opt.Host == "" {
		opt.Host, _ = os.Hostname()
	}
	return &Folder{dir: root.Docs(channel), channel: channel, opt: opt}, nil
}

// Dir returns the folder's path.
func (f *Folder) Dir() string { return f.dir }

// Version returns the version of a document with this content.
func Version(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// open opens the channel's folder, creating it if asked. A missing folder
// not to be created gives an error that wraps fs.ErrNotExist.
func (f *Folder) open(create bool) (*os.Root, error) {
	if create {
		if err := safedir.MkdirAll(f.dir); err != nil {
			return nil, fmt.Errorf("create documents folder: %w", err)
		}
	}
	// safedir refuses a link anywhere below ROOT on the way to the folder;
	// the os.Root, checked to be that very folder, then confines every
	// path inside it.
	d, err := safedir.Open(f.dir)
	if err != nil {
		return nil, fmt.Errorf("open documents of %s: %w", f.channel, err)
	}
	defer d.Close()
	r, err := d.OpenRoot()
	if err != nil {
		return nil, fmt.Errorf("open documents of %s: %w", f.channel, err)
	}
	return r, nil
}

// Read returns the document file.
func (f *Folder) Read(file string) (Doc, error) {
	if err := CheckPath(file); err != nil {
		return Doc{}, err
	}
	r, err := f.open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return Doc{}, fmt.Errorf("%s: %w", file, fs.ErrNotExist)
	}
	if err != nil {
		return Doc{}, err
	}
	defer r.Close()
	if err := noLink(r, file); err != nil {
		return Doc{}, err
	}
	data, fi, err := readFile(r, file, f.opt.MaxSize)
	if err != nil {
		return Doc{}, err
	}
	return Doc{File: file, Content: string(data), Version: Version(string(data)), Size: fi.Size(), Modified: fi.ModTime().UTC()}, nil
}

// noLink refuses a path any part of which (a folder on the way or the
// file) is a symbolic link, with ErrSymlink. A part that does not exist
// ends the check: nothing below it exists either.
func noLink(r *os.Root, file string) error {
	for i := 0; i <= len(file); i++ {
		if i < len(file) && file[i] != '/' {
			continue
		}
		fi, err := r.Lstat(file[:i])
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%s: %w", file[:i], ErrSymlink)
		}
	}
	return nil
}

// readFile reads a regular file of at most limit bytes, past the client's
// caches where it can (see the package doc).
func readFile(r *os.Root, name string, limit int64) ([]byte, fs.FileInfo, error) {
	var err error
	for range 3 {
		var data []byte
		var fi fs.FileInfo
		data, fi, err = readOnce(r, name, limit, true)
		if errors.Is(err, syscall.EINVAL) {
			data, fi, err = readOnce(r, name, limit, false) // no O_DIRECT here
		}
		if !errors.Is(err, syscall.ESTALE) {
			return data, fi, err
		}
	}
	return nil, nil, err
}

func readOnce(r *os.Root, name string, limit int64, direct bool) ([]byte, fs.FileInfo, error) {
	// O_NONBLOCK: a FIFO must not hang the reader.
	flags := os.O_RDONLY | syscall.O_NONBLOCK
	if direct {
		flags |= syscall.O_DIRECT
	}
	fh, err := r.OpenFile(name, flags, 0)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, fmt.Errorf("%s: %w", name, ErrNotRegular)
	}
	if fi.Size() > limit {
		return nil, fi, fmt.Errorf("%s: %w (%d bytes, limit %d)", name, ErrTooLarge, fi.Size(), limit)
	}
	data, err := readAll(fh, limit, direct)
	if err != nil {
		return nil, fi, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fi, fmt.Errorf("%s: %w (limit %d)", name, ErrTooLarge, limit)
	}
	return data, fi, nil
}

const directChunk = 64 << 10

// readAll reads fh to its end, or to just past limit. O_DIRECT wants
// page-aligned buffers on some filesystems: an anonymous mapping is one.
func readAll(fh *os.File, limit int64, direct bool) ([]byte, error) {
	if !direct {
		return io.ReadAll(io.LimitReader(fh, limit+1))
	}
	buf, err := unix.Mmap(-1, 0, directChunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", syscall.EINVAL, err) // read without O_DIRECT
	}
	defer unix.Munmap(buf)
	var out []byte
	for int64(len(out)) <= limit {
		n, err := fh.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF || err == nil && n == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Write replaces the content of file, creating it if missing. With a
// non-empty ifVersion it refuses with ErrConflict unless the document
// exists and is at that version. It returns the new version.
func (f *Folder) Write(ctx context.Context, file, content, ifVersion string) (string, error) {
	return f.change(ctx, file, func(old string, exists bool) (string, error) {
		if ifVersion == "" {
			return content, nil
		}
		if !exists {
			return "", fmt.Errorf("%w: %s no longer exists (expected version %s)", ErrConflict, file, ifVersion)
		}
		if v := Version(old); v != ifVersion {
			return "", fmt.Errorf("%w: %s is at version %s, not %s; read it again", ErrConflict, file, v, ifVersion)
		}
		return content, nil
	})
}

// Append adds content to the end of file, creating it if missing, and
// returns the new version. Concurrent appenders on any hosts are
// serialised: none is lost.
func (f *Folder) Append(ctx context.Context, file, content string) (string, error) {
	return f.change(ctx, file, func(old string, _ bool) (string, error) {
		return old + content, nil
	})
}

// Create makes a new document; if file exists the error wraps fs.ErrExist
// and nothing changes. It returns the version.
func (f *Folder) Create(ctx context.Context, file, content string) (string, error) {
	return f.change(ctx, file, func(_ string, exists bool) (string, error) {
		if exists {
			return "", fmt.Errorf("create %s: %w", file, fs.ErrExist)
		}
		return content, nil
	})
}

// change rewrites file under its lock with what edit makes of its current
// content.
func (f *Folder) change(ctx context.Context, file string, edit func(old string, exists bool) (string, error)) (string, error) {
	if err := CheckPath(file); err != nil {
		return "", err
	}
	r, err := f.open(true)
	if err != nil {
		return "", err
	}
	defer r.Close()
	if err := noLink(r, file); err != nil {
		return "", err
	}
	if dir := path.Dir(file); dir != "." {
		if err := r.MkdirAll(dir, safedir.DirPerm); err != nil {
			return "", fmt.Errorf("create folder %s: %w", dir, err)
		}
	}
	l, err := f.lock(ctx, r, file)
	if err != nil {
		return "", err
	}
	defer l.unlock()
	data, _, err := readFile(r, file, f.opt.MaxSize)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	content, err := edit(string(data), exists)
	if err != nil {
		return "", err
	}
	if int64(len(content)) > f.opt.MaxSize {
		return "", fmt.Errorf("%s: %w (%d bytes, limit %d)", file, ErrTooLarge, len(content), f.opt.MaxSize)
	}
	if err := l.verify(); err != nil {
		return "", err
	}
	if err := commit(r, file, []byte(content), exists); err != nil {
		if !exists && errors.Is(err, fs.ErrExist) {
			// Created meanwhile by a writer that does not lock.
			return "", fmt.Errorf("%w: %s was created by someone else meanwhile: %w", ErrConflict, file, err)
		}
		return "", err
	}
	sweep(r, path.Dir(file), time.Now())
	return Version(content), nil
}

// Delete removes file. With a non-empty ifVersion it refuses with
// ErrConflict unless the document is at that version.
func (f *Folder) Delete(ctx context.Context, file, ifVersion string) error {
	if err := CheckPath(file); err != nil {
		return err
	}
	r, err := f.open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", file, fs.ErrNotExist)
	}
	if err != nil {
		return err
	}
	defer r.Close()
	if err := noLink(r, file); err != nil {
		return err
	}
	if _, err := r.Lstat(file); err != nil {
		return err // missing: do not leave a folder or a lock behind
	}
	l, err := f.lock(ctx, r, file)
	if err != nil {
		return err
	}
	defer l.unlock()
	data, _, err := readFile(r, file, f.opt.MaxSize)
	if err != nil && !errors.Is(err, ErrTooLarge) {
		return err
	}
	if ifVersion != "" {
		if v := Version(string(data)); err != nil || v != ifVersion {
			return fmt.Errorf("%w: %s is at version %s, not %s; read it again", ErrConflict, file, v, ifVersion)
		}
	}
	if err := l.verify(); err != nil {
		return err
	}
	if err := r.Remove(file); err != nil {
		return err
	}
	return syncDir(r, path.Dir(file))
}

// List returns every document, sorted by path. Dot-files, symbolic links,
// special files and names that [CheckPath] refuses are left out. A channel
// without documents has an empty list.
func (f *Folder) List() ([]Entry, error) {
	r, err := f.open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Entry
	err = fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if CheckPath(p) != nil {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile
		}
		if err != nil {
			return err
		}
		out = append(out, Entry{File: p, Size: fi.Size(), Modified: fi.ModTime().UTC()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list documents of %s: %w", f.channel, err)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.File, b.File) })
	return out, nil
}

// sibling returns the name of a hidden file next to file: "dir/.base"+suffix.
func sibling(file, suffix string) string {
	dir, base := path.Split(file)
	return dir + "." + base + suffix
}

// writeNew creates name with O_EXCL and writes, fsyncs (if durable) and
// closes it. On failure nothing is left behind.
func writeNew(r *os.Root, name string, data []byte, durable bool) (err error) {
	fh, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, safedir.FilePerm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			r.Remove(name)
		}
	}()
	if _, err = fh.Write(data); err != nil {
		fh.Close()
		return err
	}
	// fsync before close: NFS may report write errors only here.
	if !durable {
		return fh.Close()
	}
	if err = fh.Sync(); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// commit puts data in file atomically: renamed over it if it existed,
// linked without replacing anything if it did not.
func commit(r *os.Root, file string, data []byte, existed bool) error {
	tmp := sibling(file, "."+randhex.String(4)+".tmp")
	if err := writeNew(r, tmp, data, true); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	defer r.Remove(tmp) // after a rename, already gone
	if existed {
		if err := r.Rename(tmp, file); err != nil {
			return fmt.Errorf("write %s: %w", file, err)
		}
	} else if err := linkNoReplace(r, tmp, file); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return syncDir(r, path.Dir(file))
}

// linkNoReplace makes to a name of from unless to exists (fs.ErrExist).
func linkNoReplace(r *os.Root, from, to string) error {
	err := r.Link(from, to)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		if sameFile(r, from, to) {
			return nil // made, but the NFS reply was lost
		}
		return err
	case noLinks(err):
		// No hard links on this filesystem: the lock makes the check and
		// the rename one step for every writer that locks.
		if _, err := r.Lstat(to); err == nil {
			return &fs.PathError{Op: "link", Path: to, Err: fs.ErrExist}
		}
		return r.Rename(from, to)
	default:
		return err
	}
}

func noLinks(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) ||
		errors.Is(err, syscall.EMLINK) || errors.Is(err, syscall.ENOSYS)
}

func sameFile(r *os.Root, a, b string) bool {
	fa, err1 := r.Lstat(a)
	fb, err2 := r.Lstat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// syncDir fsyncs a folder. Filesystems that cannot (EINVAL, as CIFS) are
// accepted.
func syncDir(r *os.Root, dir string) error {
	d, err := r.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	err = d.Sync()
	if err != nil && (errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.EBADF) || errors.Is(err, syscall.ENOTSUP)) {
		return nil
	}
	return err
}
