package watcher

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/safedir"
)

// janitorEvery is how often the janitor sweeps after its first sweep.
const janitorEvery = time.Hour

// firstSweepAfter is how long after its start a watcher first sweeps for
// delivery reports (at most: BounceEvery when shorter).
const firstSweepAfter = 5 * time.Second

// janitor removes temp files that writers which crashed mid-write left in
// the folders this watcher writes to (sweptFolders). It runs in its own goroutine and touches no
// watcher state; only files older than OrphanAge go, so a write in progress
// on any host (with any sane clock skew) is never disturbed.
//
// The same goroutine sweeps the channels for delivery reports every
// BounceEvery (delivery.Sweeper), the first time after firstSweepAfter, and sooner
// when an expiry or a grace ends before, or the scan read a message with
// an expiry of its own (sweepSoon); a channel's own expiry is looked at
// at least every quarter of it (delivery.Sweeper.Sweep).
func (w *watcher) janitor(ctx context.Context) {
	var orphans <-chan time.Time
	t := time.NewTimer(0)
	defer t.Stop()
	if w.cfg.OrphanAge > 0 {
		orphans = t.C
	}
	every, _, _ := w.bounceSettings()
	var bounces <-chan time.Time
	// The first sweep waits a little: a watcher that starts on a backlog
	// reads it first.
	bt := time.NewTimer(min(every, firstSweepAfter))
	defer bt.Stop()
	var sweeper *delivery.Sweeper
	if every > 0 && w.cfg.ClaimDirs == nil { // a remote watcher's tree is a mirror: the bridge sweeps
		bounces, sweeper = bt.C, w.newSweeper()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-orphans:
			w.sweep()
			t.Reset(janitorEvery)
		case <-bounces:
			next := sweeper.Sweep(w.cfg.Channels)
			bt.Reset(delivery.SweepAfter(every, next, w.now()))
		case <-w.sweepSoon:
			if sweeper != nil {
				bt.Reset(0) // a timer fired meanwhile only sweeps once more
			}
		}
	}
}

func (w *watcher) sweep() {
	now := w.now()
	for _, dir := range w.sweptFolders() {
		w.sweepFolder(dir, now)
	}
}

// sweptFolders are the folders this watcher writes to: its state, outbox
// and jobs, the presence folder, and for each channel the channel and the
// agent's claims and reply tokens, ROOT/claims/CHANNEL/AGENT (where package
// claim writes them; ROOT/claims/CHANNEL too, which holds none today).
func (w *watcher) sweptFolders() []string {
	r, agent := w.cfg.Root, w.cfg.Agent
	dirs := []string{r.State(agent), r.Outbox(agent), r.Jobs(agent), r.Presence()}
	for _, ch := range w.cfg.Channels {
		dirs = append(dirs, r.Channel(ch), r.Claims(ch), r.AgentClaims(ch, agent))
	}
	return dirs
}

// sweepFolder removes the orphaned temp files of dir.
func (w *watcher) sweepFolder(dir string, now time.Time) {
	d, err := safedir.Open(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			w.log.Warn("janitor: cannot open folder", keyFile, dir, keyErr, err)
		}
		return
	}
	removed, err := d.RemoveOrphans(w.cfg.OrphanAge, now)
	d.Close()
	for _, name := range removed {
		w.log.Info("janitor: removed an orphaned temp file", keyFile, dir+"/"+name, keyAge, w.cfg.OrphanAge)
	}
	if err != nil {
		w.log.Warn("janitor: sweep failed", keyFile, dir, keyErr, err)
	}
}
