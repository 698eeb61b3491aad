// Package fswake wakes a loop when a file lands in one of its folders on
// this host: the one owner of fsnotify in collab.
//
// A wake-up is a hint, never the truth: no notification crosses NFS, SMB
// or FUSE clients, and events can be lost. Every user polls as well; a
// wake-up only makes the next look sooner.
//
// # What wakes
//
// A file created in a watched folder (a published file: a temp file
// linked or renamed under its name), or written to in place (a foreign
// writer without a temp file, whose creation may have been seen empty).
// Names starting with "." (writers' temp files) never wake. The call
// wake("", "") means "look at everything": once the watches are in place
// (a file made before then has no event) and after lost events.
//
// # One watcher per process
//
// Every Watch of a process shares one fsnotify watcher (one inotify
// instance: a user has fs.inotify.max_user_instances of them, 128 by
// default, for every process of theirs), so that a server with many
// waits and event streams at once leaves instances for the others. A
// folder is watched while at least one Watch holds it; the watcher is
// open while there is a Watch at all. One goroutine reads its events and
// hands each to the Watches of its folder without waiting: a Watch whose
// wake is slow (64 events behind) loses events, and is woken with ("", "")
// when it is ready again, never holding up the others. A failure of the
// watcher ends every Watch with its error. Being shared, it is no tool
// for a testing/synctest bubble (the first Watch's goroutines would be
// the bubble's): code run in one turns its wakes off (as
// service.Config.NoFSWake does) and polls.
//
// Two paths to one folder (a bind mount, a symlinked ROOT) share one
// inotify watch, whose events carry the first path: a Watch of the other
// path is not woken (its polling finds the files).
package fswake

import (
	"context"
	"os"
	"path/filepath"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Folders is what one watch wakes on.
type Folders struct {
	// Dirs are watched; one that cannot be watched is an error, unless
	// Lax.
	Dirs []string
	// Grow, one of Dirs or "": a folder created in it is watched too
	// (a new channel in channels/).
	Grow string
	// Lax skips a folder of Dirs that cannot be watched (not there yet):
	// polling finds its files.
	Lax bool
}

// Watch calls wake(dir, name) for each file created or written in one of
// dirs until ctx is done (nil). See the package doc for what wakes. A
// folder that cannot be watched, or a failed watch, is an error: the
// caller goes on polling.
func Watch(ctx context.Context, dirs []string, wake func(dir, name string)) error {
	return Folders{Dirs: dirs}.Watch(ctx, wake)
}

// Watch is [Watch] on f's folders.
func (f Folders) Watch(ctx context.Context, wake func(dir, name string)) error {
	s, err := shared.subscribe(f.Dirs, f.Lax)
	if err != nil {
		return err
	}
	defer shared.unsubscribe(s)
	grow := ""
	if f.Grow != "" {
		grow = filepath.Clean(f.Grow)
	}
	wake("", "") // a file created before the watches were in place
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-s.events:
			if grow != "" && e.dir == grow && e.create {
				path := filepath.Join(e.dir, e.name)
				if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
					_ = shared.add(s, path) // a new folder (gone already: nothing to watch)
				}
			}
			wake(e.dir, e.name)
		case <-s.kick:
			if s.lost.Swap(false) {
				wake("", "") // events were lost: list now
			}
		case err := <-s.errc:
			return err
		}
	}
}

// Channels wakes a watcher when a file lands in one of its channel
// folders under Root: wake(channel, file). It implements the watcher's
// Waker.
type Channels struct {
	Root tree.Root
}

// Via names its wake-ups in a watcher's seen files.
func (Channels) Via() string { return "fsnotify" }

// Watch calls wake(channel, file) for each file created or written in
// one of channels' folders, as [Watch] does; ("", "") means look at every
// channel.
func (c Channels) Watch(ctx context.Context, channels []string, wake func(channel, file string)) error {
	byDir := make(map[string]string, len(channels))
	dirs := make([]string, 0, len(channels))
	for _, ch := range channels {
		byDir[filepath.Clean(c.Root.Channel(ch))] = ch
		dirs = append(dirs, c.Root.Channel(ch))
	}
	return Watch(ctx, dirs, func(dir, name string) {
		if dir == "" {
			wake("", "")
			return
		}
		wake(byDir[dir], name)
	})
}
