package watcher

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// FSNotify wakes the watcher when a file appears in one of its channel
// folders on this host, or is written to in place (a foreign writer
// without a temp file: the look at its creation may have found it
// empty). It never sees other NFS hosts' writes (no notification crosses
// NFS clients); polling finds those.
type FSNotify struct {
	Root tree.Root
}

// Watch implements Waker.
func (f FSNotify) Watch(ctx context.Context, channels []string, wake func(channel, file string)) error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("fsnotify: %w", err)
	}
	defer fw.Close()
	byDir := make(map[string]string, len(channels))
	for _, ch := range channels {
		byDir[filepath.Clean(f.Root.Channel(ch))] = ch
		if err := fw.Add(f.Root.Channel(ch)); err != nil {
			return fmt.Errorf("fsnotify %s: %w", ch, err)
		}
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
			// Create for a published file; Write for one written in place
			// by a foreign writer, whose first look may have found it empty.
			if ev.Has(fsnotify.Create|fsnotify.Write) && !strings.HasPrefix(name, ".") {
				wake(byDir[filepath.Clean(dir)], name)
			}
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
