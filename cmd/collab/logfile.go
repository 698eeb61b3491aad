package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/collabdev/collab/internal/plumbing/safedir"
)

// A watcher's log, ROOT/logs/AGENT.log, is rotated by size: when a write
// would take it past logMaxBytes it becomes AGENT.log.1 (the older ones
// shift to .2 … .logBackups, the oldest is dropped) and a new one starts.
const (
	logMaxBytes = 10 << 20
	logBackups  = 3
)

// rotatingLog appends to name in dir, rotating it by size. It follows no
// link: dir is a [safedir.Dir] and the file is opened through it. Another
// watcher of the same agent may append to the same file; if it rotated the
// file first, this one reopens the new file instead of rotating again.
type rotatingLog struct {
	mu      sync.Mutex
	dir     *safedir.Dir
	name    string
	max     int64
	backups int
	f       *os.File
	size    int64
}

func openRotatingLog(dir *safedir.Dir, name string, max int64, backups int) (*rotatingLog, error) {
	l := &rotatingLog{dir: dir, name: name, max: max, backups: backups}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *rotatingLog) open() error {
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
func (l *rotatingLog) Write(p []byte) (int, error) {
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
func (l *rotatingLog) rotate() error {
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
func (l *rotatingLog) current(mine fs.FileInfo) bool {
	f, err := l.dir.OpenAppend(l.name, safedir.FilePerm)
	if err != nil {
		return false
	}
	defer f.Close()
	cur, err := f.Stat()
	return err == nil && os.SameFile(mine, cur)
}

// Close closes the file and the folder.
func (l *rotatingLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.f.Close(), l.dir.Close())
}
