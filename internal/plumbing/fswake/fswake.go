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
package fswake

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"

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
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("fsnotify: %w", err)
	}
	defer fw.Close()
	for _, dir := range f.Dirs {
		if err := fw.Add(dir); err != nil && !f.Lax {
			return fmt.Errorf("fsnotify %s: %w", dir, err)
		}
	}
	grow := ""
	if f.Grow != "" {
		grow = filepath.Clean(f.Grow)
	}
	wake("", "") // a file created before the watches were in place
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			dir, name := filepath.Split(ev.Name)
			if !ev.Has(fsnotify.Create|fsnotify.Write) || strings.HasPrefix(name, ".") {
				continue
			}
			dir = filepath.Clean(dir)
			if grow != "" && dir == grow && ev.Has(fsnotify.Create) {
				_ = fw.Add(ev.Name) // a new folder (a file is refused: nothing to watch)
			}
			wake(dir, name)
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				wake("", "") // events were lost: list now
				continue
			}
			return fmt.Errorf("fsnotify: %w", err)
		}
	}
}

// Channels wakes a watcher when a file lands in one of its channel
// folders under Root: wake(channel, file). It implements the watcher's
// Waker.
type Channels struct {
	Root tree.Root
}

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
