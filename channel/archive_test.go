package channel_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestArchive: messages named before the cut-off move, unchanged, to
// channels/C/archive/YYYY-MM/ by the month of their names; the channel's
// readers pass over the archive folder in silence, and ReadArchive returns
// the archived messages in order.
func TestArchive(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	jan := time.Date(2026, 1, 31, 23, 59, 59, 0, time.UTC)
	feb := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	mar := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var posted []channel.Message
	for _, p := range []struct {
		at   time.Time
		text string
	}{{jan, "january"}, {jan.Add(-time.Hour), "january, earlier"}, {feb, "february"}, {mar, "march"}} {
		posted = append(posted, post(t, &channel.Writer{Root: root, Now: fixed(p.at)}, ch, "a", p.text))
	}
	before, err := os.ReadFile(filepath.Join(root.Channel(ch), posted[0].File))
	if err != nil {
		t.Fatal(err)
	}

	n, err := channel.Archive(root, ch, mar)
	if err != nil || n != 3 {
		t.Fatalf("Archive = %d, %v; want 3 moved", n, err)
	}
	for _, want := range []struct{ month, file string }{
		{"2026-01", posted[0].File}, {"2026-01", posted[1].File}, {"2026-02", posted[2].File},
	} {
		path := filepath.Join(root.Channel(ch), "archive", want.month, want.file)
		if _, err := os.Lstat(path); err != nil {
			t.Errorf("archived message: %v", err)
		}
	}
	after, err := os.ReadFile(filepath.Join(root.Channel(ch), "archive", "2026-01", posted[0].File))
	if err != nil || string(after) != string(before) {
		t.Errorf("archived message changed: %q, %v; want %q", after, err, before)
	}

	live, skips, err := channel.ReadAll(root, ch, channel.ReaderOptions{})
	if err != nil || len(skips) != 0 || !slices.Equal(texts(live), []string{"march"}) {
		t.Errorf("ReadAll after Archive = %q, skips %v, %v; want [march] and no skip", texts(live), skips, err)
	}
	archived, skips, err := channel.ReadArchive(root, ch, channel.ReaderOptions{})
	if want := []string{"january, earlier", "january", "february"}; err != nil || len(skips) != 0 || !slices.Equal(texts(archived), want) {
		t.Errorf("ReadArchive = %q, skips %v, %v; want %q", texts(archived), skips, err, want)
	}

	if n, err := channel.Archive(root, ch, mar); err != nil || n != 0 {
		t.Errorf("Archive again = %d, %v; want nothing moved", n, err)
	}
	if n, err := channel.Archive(root, ch, mar.Add(time.Second)); err != nil || n != 1 {
		t.Errorf("Archive past march = %d, %v; want 1 moved", n, err)
	}
	if _, err := os.Lstat(filepath.Join(root.Channel(ch), "archive", "2026-03", posted[3].File)); err != nil {
		t.Errorf("archived message: %v", err)
	}
}

func TestReadArchiveNone(t *testing.T) {
	const ch = "general"
	root := newRoot(t, ch)
	if msgs, skips, err := channel.ReadArchive(root, ch, channel.ReaderOptions{}); err != nil || msgs != nil || skips != nil {
		t.Errorf("ReadArchive of a channel never archived = %v, %v, %v; want nothing", msgs, skips, err)
	}
	// Folders that are not months are not read.
	if err := os.MkdirAll(filepath.Join(root.Channel(ch), "archive", "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root.Channel(ch), "archive", "notes", fileName("a", t0, "0001")), messageJSON("a", "not archived"))
	if msgs, _, err := channel.ReadArchive(root, ch, channel.ReaderOptions{}); err != nil || len(msgs) != 0 {
		t.Errorf("ReadArchive read a folder that is not a month: %q, %v", texts(msgs), err)
	}
	for _, f := range []func() error{
		func() error { _, err := channel.Archive(root, "../x", t0); return err },
		func() error { _, _, err := channel.ReadArchive(root, "../x", channel.ReaderOptions{}); return err },
	} {
		if err := f(); !errors.Is(err, tree.ErrBadName) {
			t.Errorf("bad channel name: %v, want ErrBadName", err)
		}
	}
}
