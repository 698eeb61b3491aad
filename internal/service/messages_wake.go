package service

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/collabdev/collab/internal/plumbing/fswake"
)

// A wait for a reply on the mount polls the channel (delegate.Options.Poll,
// a second by default): that is the truth. What makes it return as soon as
// the reply lands are wakes, each naming a file to read at once:
//
//   - fsnotify on this host (package fswake), on the channel's folder, or on
//     the channels folder until the channel's folder appears: a file
//     published on this host, or by any writer where the folder is local.
//     No event crosses NFS, SMB or FUSE from another host: there the poll,
//     or NATS, finds the reply.
//   - the NATS announcements (Config.Wake), where the door configured them.
//   - the caller's own (delegate.Options.Wake), if any.
//
// A wake that is lost (a full queue, an fsnotify overflow, a watch that
// could not be made) costs only time: the next poll finds the reply.

// replyWakes returns the names of the files landing in channel ch, from
// fsnotify on this host, the NATS announcements (Config.Wake) and extra
// (nil: none), on one channel, and the function that stops them (to call once the wait is
// over). A name is handed over only when the wait takes it: a wait that
// is scanning is not queued behind, it scans again once it is done. The
// empty name means "look": the watch is in place, or events were lost.
func (m *Mount) replyWakes(ctx context.Context, ch string, extra <-chan string) (<-chan string, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ins := []<-chan string{extra}
	stopNATS := func() {}
	if m.cfg.Wake != nil {
		w, stop, err := m.cfg.Wake(ctx, ch)
		if err != nil {
			m.cfg.Logger.Warn("waiting without the NATS announcements", keyErr, err)
		} else {
			ins, stopNATS = append(ins, w), stop
		}
	}
	out, wg := mergeWakes(ctx, ins...)
	if ctx.Err() == nil && !m.cfg.NoFSWake { // else a last look: one scan, no watch
		wg.Go(func() { m.watchChannel(ctx, ch, out) })
	}
	return out, func() {
		cancel()
		wg.Wait()
		stopNATS()
	}
}

// watchChannel sends on out the names of the files fsnotify sees landing
// in channel ch's folder, until ctx is done. The channels folder is
// watched too, for ch's folder to appear (a reply expected before the
// first message of a new channel is posted): its appearance is a look.
func (m *Mount) watchChannel(ctx context.Context, ch string, out chan<- string) {
	chans, dir := filepath.Clean(m.cfg.Root.Channels()), filepath.Clean(m.cfg.Root.Channel(ch))
	f := fswake.Folders{Dirs: []string{chans, dir}, Grow: chans, Lax: true}
	err := f.Watch(ctx, func(d, name string) {
		switch {
		case d == dir:
		case d == "":
		case d == chans && name == ch:
			name = "" // the folder came: look (its watch is in place)
		default:
			return // another channel's
		}
		select {
		case out <- name:
		case <-ctx.Done():
		}
	})
	if err != nil {
		m.cfg.Logger.Debug("waiting without fsnotify", "channel", ch, keyErr, err)
	}
}

// mergeWakes forwards what comes on each of ins to the channel it
// returns, unbuffered, until ctx is done or that in is closed; wg counts
// the forwarders (add more to it; wait on it once ctx is done).
func mergeWakes(ctx context.Context, ins ...<-chan string) (chan string, *sync.WaitGroup) {
	out := make(chan string)
	wg := new(sync.WaitGroup)
	for _, in := range ins {
		if in == nil {
			continue
		}
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case name, ok := <-in:
					if !ok {
						return
					}
					select {
					case out <- name:
					case <-ctx.Done():
						return
					}
				}
			}
		})
	}
	return out, wg
}
