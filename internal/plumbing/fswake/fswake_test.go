package fswake_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestChannelsWakes: Watch wakes once its watches are in place (a file
// created before then is found by that poll, not the next one), then on
// each new file and each write to a file written in place, and never for a
// dot-file (a writer's temp file).
func TestChannelsWakes(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	dir := root.Channel("room")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	type wake struct{ ch, file string }
	woke := make(chan wake, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- fswake.Channels{Root: root}.Watch(ctx, []string{"room"}, func(ch, file string) { woke <- wake{ch, file} })
	}()
	wait := func(what string, want wake) {
		t.Helper()
		select {
		case got := <-woke:
			if got != want {
				t.Errorf("woken %s with %+v, want %+v", what, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no wake-up %s", what)
		}
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case <-woke:
			t.Fatalf("woken %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
	wait("once the watches are in place", wake{}) // list: whatever came before
	quiet("with nothing new")

	if err := os.WriteFile(filepath.Join(dir, ".tmp-1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	quiet("by a dot-file")
	if err := os.WriteFile(filepath.Join(dir, "msg-20261124-000000-bob-a001.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	wait("by a new message file", wake{"room", "msg-20261124-000000-bob-a001.json"})
	drain := func() { // the write that followed the creation
		for {
			select {
			case <-woke:
			case <-time.After(200 * time.Millisecond):
				return
			}
		}
	}
	drain()

	// Written in place: created empty, then filled. The look at the
	// creation finds nothing to read; the write must wake again.
	name := "msg-20261124-000001-bob-a002.json"
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	wait("by a file created empty", wake{"room", name})
	quiet("before it is written")
	if _, err := f.Write([]byte("{}")); err != nil {
		t.Fatal(err)
	}
	wait("by a write in place", wake{"room", name})
	drain()

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch: %v", err)
	}
}

// TestChannelsMissingChannel: a channel folder that does not exist is an
// error (the caller logs it and polls), not a hang.
func TestChannelsMissingChannel(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	err := fswake.Channels{Root: root}.Watch(context.Background(), []string{"nowhere"}, func(string, string) {})
	if err == nil {
		t.Fatal("Watch on a missing folder returned nil")
	}
}

// TestFoldersGrowLax: a folder that is not there is skipped when Lax, and
// a folder created in Grow is watched from then on.
func TestFoldersGrowLax(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	woke := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	f := fswake.Folders{Dirs: []string{base, filepath.Join(base, "missing")}, Grow: base, Lax: true}
	go func() { done <- f.Watch(ctx, func(dir, name string) { woke <- filepath.Join(dir, name) }) }()
	want := func(path string) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case got := <-woke:
				if got == path {
					return
				}
			case <-deadline:
				t.Fatalf("no wake-up for %s", path)
			}
		}
	}
	want("") // the watches are in place
	sub := filepath.Join(base, "room")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	want(sub)
	file := filepath.Join(sub, "msg.json")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	want(file)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch: %v", err)
	}
}
