package main

import (
	"context"
	"errors"
	"sync"

	"github.com/collabdev/collab/internal/testsupport/fusemount"
)

// mounts makes bindfs views of a folder, each standing for one host of a
// shared NFS export (as package bindfstest does for tests), and unmounts
// whatever is left at the end.
type mounts struct {
	mu     sync.Mutex
	points map[string]bool
}

// mount mounts backing at the new folder at with bindfs' defaults (FUSE
// caches attributes and entries for 1 s).
func (m *mounts) mount(ctx context.Context, backing, at string) error {
	m.mu.Lock()
	if m.points == nil {
		m.points = make(map[string]bool)
	}
	m.points[at] = true
	m.mu.Unlock()
	return fusemount.Bindfs(ctx, backing, at)
}

// unmount unmounts at.
func (m *mounts) unmount(at string) error {
	m.mu.Lock()
	delete(m.points, at)
	m.mu.Unlock()
	return fusemount.Unmount(at)
}

// unmountAll unmounts every mount still up.
func (m *mounts) unmountAll() error {
	m.mu.Lock()
	var points []string
	for p := range m.points {
		points = append(points, p)
	}
	m.mu.Unlock()
	var errs []error
	for _, p := range points {
		errs = append(errs, m.unmount(p))
	}
	return errors.Join(errs...)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
