package watcher

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"collab/internal/plumbing/safedir"
)

// janitorEvery is how often the janitor sweeps after its first sweep.
const janitorEvery = time.Hour

// janitor removes temp files that writers which crashed mid-write left in
// the folders this watcher writes to: its channels, their claims, its state
// and the presence folder. It runs in its own goroutine and touches no
// watcher state; only files older than OrphanAge go, so a write in progress
// on any host (with any sane clock skew) is never disturbed.
func (w *watcher) janitor(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.sweep()
		t.Reset(janitorEvery)
	}
}

func (w *watcher) sweep() {
	state := w.cfg.Root.State(w.cfg.Agent)
	dirs := []string{state, filepath.Join(state, outboxDir), filepath.Join(state, "jobs"), w.cfg.Root.Presence()}
	for _, ch := range w.cfg.Channels {
		dirs = append(dirs, w.cfg.Root.Channel(ch), w.cfg.Root.Claims(ch))
	}
	now := w.now()
	for _, dir := range dirs {
		d, err := safedir.Open(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				w.log.Warn("janitor: cannot open folder", keyFile, dir, keyErr, err)
			}
			continue
		}
		removed, err := d.RemoveOrphans(w.cfg.OrphanAge, now)
		d.Close()
		for _, name := range removed {
			w.log.Info("janitor: removed an orphaned temp file", keyFile, dir+"/"+name, "older_than", w.cfg.OrphanAge)
		}
		if err != nil {
			w.log.Warn("janitor: sweep failed", keyFile, dir, keyErr, err)
		}
	}
}
