// Package rotlog is a log file rotated by size, appended to through a
// folder that follows no link: a watcher's ROOT/logs/AGENT.log. When a
// write would take the file past its size it becomes NAME.1 (the older
// ones shift to .2 … .N, the oldest is dropped) and a new one starts.
// Several processes may append to the same file: one that finds it
// rotated by another reopens it instead of rotating again.
package rotlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/collabdev/collab/internal/plumbing/safedir"
)

// A watcher's log is rotated past MaxBytes, keeping Backups old files.
const (
	MaxBytes = 10 << 20
	Backups  = 3
)

// File appends to name in dir, rotating it by size. It follows no link:
// dir is a [safedir.Dir] and the file is opened through it. Another
// process may append to the same file; if it rotated the file first,
// this one reopens the new file instead of rotating again.
type File struct {
	mu      sync.Mutex
	dir     *safedir.Dir
	name    string
	max     int64
	backups int
	f       *os.File
	size    int64
}

// Open opens name in dir for appending, rotated past max bytes with
// backups old files kept. The File owns dir: Close closes it.
func Open(dir *safedir.Dir, name string, max int64, backups int) (*File, error) {
	l := &File{dir: dir, name: name, max: max, backups: backups}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *File) open() error {
	f, err := l.dir.OpenAppend(l.name, safedir.FilePerm)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Write appends p (one log record) whole to the current file.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size > 0 && l.size+int64(len(p)) > l.max {
		if err := l.rotate(); err != nil {
			return 0, fmt.Errorf("rotate log: %w", err)
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

// rotate shifts name.(k) to name.(k+1), name to name.1, and opens a new
// name. If name is no longer the file it writes to, another process
// rotated it: it only reopens name.
func (l *File) rotate() error {
	mine, err := l.f.Stat()
	if err != nil {
		return err
	}
	if l.current(mine) {
		for k := l.backups - 1; k >= 1; k-- {
			err := l.dir.Rename(fmt.Sprintf("%s.%d", l.name, k), fmt.Sprintf("%s.%d", l.name, k+1))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if err := l.dir.Rename(l.name, l.name+".1"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	old := l.f
	if err := l.open(); err != nil {
		return err
	}
	return old.Close()
}

// current reports whether name is still the file mine describes.
func (l *File) current(mine fs.FileInfo) bool {
	f, err := l.dir.OpenAppend(l.name, safedir.FilePerm)
	if err != nil {
		return false
	}
	defer f.Close()
	cur, err := f.Stat()
	return err == nil && os.SameFile(mine, cur)
}

// Close closes the file and the folder.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.f.Close(), l.dir.Close())
}
