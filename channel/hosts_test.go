package channel_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/bindfstest"
)

// TestTwoHosts models two hosts sharing one folder with two bindfs mounts
// of it: a message posted through host B is found by a polling Reader on
// host A, while inotify on A sees nothing of it. This is why polling is the
// truth and notifications are only hints (research notes §7.1).
func TestTwoHosts(t *testing.T) {
	backing := t.TempDir()
	const ch = "general"
	if err := os.MkdirAll(tree.Root(backing).Channel(ch), 0o755); err != nil {
		t.Fatal(err)
	}
	hostA := tree.Root(bindfstest.Mount(t, backing))
	hostB := tree.Root(bindfstest.Mount(t, backing))

	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(hostA.Channel(ch)); err != nil {
		t.Fatal(err)
	}
	r, err := channel.NewReader(hostA, ch, channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if msgs, skips := scan(t, r); len(msgs)+len(skips) != 0 {
		t.Fatalf("empty channel: Scan = %v, %v", msgs, skips)
	}

	sent := post(t, &channel.Writer{Root: hostB}, ch, "bob", "hello from host B")

	// inotify on A: no event for a write made through B.
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
wait:
	for {
		select {
		case ev := <-w.Events:
			t.Errorf("inotify on host A saw %v for a write made on host B; the premise of this test changed", ev)
		case err := <-w.Errors:
			t.Fatalf("watcher: %v", err)
		case <-timer.C:
			break wait
		}
	}

	// Polling on A finds it.
	var got []channel.Message
	for deadline := time.Now().Add(10 * time.Second); len(got) == 0; {
		msgs, skips := scan(t, r)
		if len(skips) != 0 {
			t.Errorf("Scan on host A skipped %v", skips)
		}
		got = append(got, msgs...)
		if len(got) == 0 && time.Now().After(deadline) {
			t.Fatal("the Reader on host A never found the message posted on host B")
		}
		if len(got) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(got) != 1 || got[0].ID != sent.ID || got[0].Content.Text != sent.Content.Text {
		t.Errorf("host A read %+v, want the message %s posted on host B", got, sent.ID)
	}

	// Control: inotify on A does report a write made through A, so the
	// silence above is the mount's doing, not a broken watcher.
	post(t, &channel.Writer{Root: hostA}, ch, "alice", "hello from host A")
	select {
	case <-w.Events:
	case err := <-w.Errors:
		t.Fatalf("watcher: %v", err)
	case <-time.After(5 * time.Second):
		t.Error("inotify on host A saw no event for a write made on host A either")
	}
}

// TestTwoHostsNegativeLookupCache: host A's kernel has cached that a name
// does not exist (it looked before the message was written), so its
// directory listing shows the new name while open() still says ENOENT
// (research notes §7.2). The Reader must neither report nor drop the
// message, and must return it once the cache expires.
func TestTwoHostsNegativeLookupCache(t *testing.T) {
	backing := t.TempDir()
	const ch = "general"
	if err := os.MkdirAll(tree.Root(backing).Channel(ch), 0o755); err != nil {
		t.Fatal(err)
	}
	hostA := tree.Root(bindfstest.Mount(t, backing, "-o", "attr_timeout=2,entry_timeout=2,negative_timeout=2"))
	hostB := tree.Root(bindfstest.Mount(t, backing))
	r, err := channel.NewReader(hostA, ch, channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}

	m := channel.Message{
		ID:        channel.NewID("bob", time.Now(), "beef"),
		SessionID: ch, From: "bob", Content: channel.Content{Text: "cached away"},
	}
	pathA := filepath.Join(hostA.Channel(ch), m.ID+".json")
	if _, err := os.Lstat(pathA); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Lstat before the write: %v, want ENOENT", err)
	}
	if err := (&channel.Writer{Root: hostB}).Post(&m); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(pathA); err == nil {
		t.Log("host A's negative lookup cache did not hold; the ENOENT path was not exercised")
	}

	var got []channel.Message
	for deadline := time.Now().Add(15 * time.Second); len(got) == 0; {
		msgs, skips := scan(t, r)
		if len(skips) != 0 {
			t.Fatalf("Scan reported %v for a file hidden by a lookup cache", skips)
		}
		got = msgs
		if len(got) == 0 && time.Now().After(deadline) {
			t.Fatal("the message never appeared on host A")
		}
		if len(got) == 0 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if len(got) != 1 || got[0].ID != m.ID {
		t.Errorf("host A read %+v, want %s", got, m.ID)
	}
}
