package fswake

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// inotifyInstances counts this process's inotify instances: its file
// descriptors that link to anon_inode:inotify.
func inotifyInstances(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// watched returns the folders the shared watcher watches (nil: none open).
func watched() []string {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.inst == nil {
		return nil
	}
	l := shared.inst.fw.WatchList()
	slices.Sort(l)
	return l
}

// lostBy reports whether a Watch of dir has lost events it was not yet
// told of.
func lostBy(dir string) bool {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for s := range shared.subs[filepath.Clean(dir)] {
		if s.lost.Load() {
			return true
		}
	}
	return false
}

// eventually waits, generously, for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watcher is one Watch under test and what woke it.
type watcher struct {
	dirs   []string
	cancel context.CancelFunc
	done   chan error

	mu    sync.Mutex
	woke  []string // dir/name, or "" for a look
	ready chan struct{}
}

func startWatcher(t *testing.T, dirs ...string) *watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{dirs: dirs, cancel: cancel, done: make(chan error, 1), ready: make(chan struct{})}
	var once sync.Once
	go func() {
		w.done <- Watch(ctx, dirs, func(dir, name string) {
			if dir == "" {
				once.Do(func() { close(w.ready) })
				return
			}
			w.mu.Lock()
			w.woke = append(w.woke, filepath.Join(dir, name))
			w.mu.Unlock()
		})
	}()
	t.Cleanup(cancel)
	return w
}

func (w *watcher) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Compact(slices.Sorted(slices.Values(w.woke)))
}

func (w *watcher) stop(t *testing.T) {
	t.Helper()
	w.cancel()
	select {
	case err := <-w.done:
		if err != nil {
			t.Errorf("Watch of %v: %v", w.dirs, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Watch of %v does not end", w.dirs)
	}
}

// TestSharedWatcher: 200 concurrent Watches on 50 folders (more than the
// 128 inotify instances a user has by default) use one inotify instance;
// each file wakes exactly the Watches of its folder; a folder is no
// longer watched once its last Watch ends, and the instance is closed
// with the last Watch. (Not parallel: it counts the process's
// instances.)
func TestSharedWatcher(t *testing.T) {
	const nWatch, nDirs = 200, 50
	before := inotifyInstances(t)
	base := t.TempDir()
	dirs := make([]string, nDirs)
	for i := range dirs {
		dirs[i] = filepath.Join(base, fmt.Sprintf("d%02d", i))
		if err := os.Mkdir(dirs[i], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws := make([]*watcher, nWatch)
	for i := range ws {
		ws[i] = startWatcher(t, dirs[i%nDirs], dirs[(i*7+1)%nDirs])
	}
	for _, w := range ws {
		select {
		case <-w.ready:
		case err := <-w.done:
			t.Fatalf("Watch of %v: %v", w.dirs, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("Watch of %v never in place", w.dirs)
		}
	}
	if during := inotifyInstances(t); during != before+1 {
		t.Errorf("%d Watches use %d inotify instances, want 1 (%d before, %d during)", nWatch, during-before, before, during)
	}
	if got := watched(); len(got) != nDirs {
		t.Errorf("%d folders watched, want %d", len(got), nDirs)
	}

	// A file in each folder wakes exactly the Watches of its folder.
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "msg.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, ".tmp"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range ws {
		want := slices.Compact(slices.Sorted(slices.Values([]string{filepath.Join(w.dirs[0], "msg.json"), filepath.Join(w.dirs[1], "msg.json")})))
		eventually(t, fmt.Sprintf("the Watch of %v woken by its files", w.dirs), func() bool { return slices.Equal(w.seen(), want) })
	}

	// The Watches of d00 end: d00 is no longer watched, the others are.
	var rest []*watcher
	for _, w := range ws {
		if slices.Contains(w.dirs, dirs[0]) {
			w.stop(t)
		} else {
			rest = append(rest, w)
		}
	}
	if got := watched(); slices.Contains(got, dirs[0]) || len(got) != nDirs-1 {
		t.Errorf("watched after d00's Watches ended: %d folders (d00 among them: %v)", len(got), slices.Contains(got, dirs[0]))
	}
	if err := os.WriteFile(filepath.Join(dirs[1], "second.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, w := range rest {
		if slices.Contains(w.dirs, dirs[1]) {
			eventually(t, "a second file woke d01's Watch", func() bool { return slices.Contains(w.seen(), filepath.Join(dirs[1], "second.json")) })
		}
	}
	for _, w := range rest {
		w.stop(t)
	}
	if got := watched(); got != nil {
		t.Errorf("still watching %v with no Watch", got)
	}
	if after := inotifyInstances(t); after != before {
		t.Errorf("%d inotify instances after every Watch ended, %d before", after, before)
	}
}

// TestSlowSubscriber: a Watch whose wake blocks loses events but never
// holds up another Watch of the same folder; once it goes on it is told
// to look at everything.
func TestSlowSubscriber(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	looks := make(chan struct{}, 100)
	slowDone := make(chan error, 1)
	go func() {
		slowDone <- Watch(ctx, []string{dir}, func(d, name string) {
			if d == "" {
				looks <- struct{}{}
				return
			}
			<-release // stuck on its first file
		})
	}()
	<-looks // in place
	fastDone := make(chan error, 1)
	got := make(chan string, 4*queueLen)
	go func() {
		fastDone <- Watch(ctx, []string{dir}, func(_, name string) { got <- name })
	}()
	if name := <-got; name != "" {
		t.Fatalf("the fast Watch woken first by %q", name)
	}
	// One file at a time, each seen by the fast Watch before the next:
	// the slow one, stuck on the first, falls behind and loses events.
	for i := range 3 * queueLen {
		name := fmt.Sprintf("m%03d.json", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		for n := ""; n != name; {
			select {
			case n = <-got:
			case <-time.After(10 * time.Second):
				t.Fatalf("the fast Watch was not woken by %s", name)
			}
		}
	}
	if !lostBy(dir) {
		t.Error("the slow Watch lost no event")
	}
	close(release)
	select {
	case <-looks: // events were lost: look
	case <-time.After(10 * time.Second):
		t.Fatal("the slow Watch was not told to look after losing events")
	}
	cancel()
	if err := <-slowDone; err != nil {
		t.Errorf("slow Watch: %v", err)
	}
	if err := <-fastDone; err != nil {
		t.Errorf("fast Watch: %v", err)
	}
}

// TestWatchMissingFolder: a folder that cannot be watched is an error and
// leaves nothing held; with Lax it is skipped.
func TestWatchMissingFolder(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "nowhere")
	err := Watch(context.Background(), []string{base, missing}, func(string, string) {})
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Watch on a missing folder: %v", err)
	}
	if got := watched(); got != nil {
		t.Errorf("a failed Watch left %v watched", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- Folders{Dirs: []string{base, missing}, Lax: true}.Watch(ctx, func(dir, _ string) {
			if dir == "" {
				once.Do(func() { close(in) })
			}
		})
	}()
	<-in
	if got := watched(); !slices.Equal(got, []string{base}) {
		t.Errorf("watched %v, want only %s", got, base)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("lax Watch: %v", err)
	}
}
