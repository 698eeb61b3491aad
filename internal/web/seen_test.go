package web

import (
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestMarkSeen checks a cursor only moves forward: a newer second
// replaces it, the same second adds to it, an older one leaves it; and
// unread counts within the cursor's second by its ids.
func TestMarkSeen(t *testing.T) {
	root := tree.Root(t.TempDir())
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	id := func(agent string, sec int, hex string) string {
		return channel.NewID(agent, t0.Add(time.Duration(sec)*time.Second), hex)
	}
	cursor := func() []string {
		st, err := loadSeen(root, "ann")
		if err != nil {
			t.Fatal(err)
		}
		return st.Seen["dev"]
	}
	steps := []struct {
		ids  []string
		want []string
	}{
		{[]string{id("bob", 1, "aaaa")}, []string{id("bob", 1, "aaaa")}},
		{[]string{id("cat", 1, "bbbb")}, []string{id("bob", 1, "aaaa"), id("cat", 1, "bbbb")}},
		{[]string{id("bob", 0, "cccc")}, []string{id("bob", 1, "aaaa"), id("cat", 1, "bbbb")}}, // older: kept
		{[]string{id("bob", 2, "dddd")}, []string{id("bob", 2, "dddd")}},
	}
	for i, s := range steps {
		if err := markSeen(root, "ann", "dev", s.ids...); err != nil {
			t.Fatal(err)
		}
		if got := cursor(); !slices.Equal(got, s.want) {
			t.Errorf("step %d: cursor %v, want %v", i, got, s.want)
		}
	}
	if err := markSeen(root, "../x", "dev", id("bob", 3, "eeee")); err == nil {
		t.Error("a bad person name was taken")
	}
	if !seenThrough(cursor(), id("bob", 2, "dddd")) || seenThrough(cursor(), id("cat", 2, "ffff")) || !seenThrough(cursor(), id("cat", 1, "ffff")) {
		t.Error("seenThrough")
	}
}

// TestUnreadNames checks the count from names: others' messages after
// the cursor or in its second but not among its ids, capped.
func TestUnreadNames(t *testing.T) {
	root := tree.Root(t.TempDir())
	w := &channel.Writer{Root: root}
	var ids []string
	for _, from := range []string{"bob", "ann", "cat"} {
		m := channel.Message{SessionID: "dev", From: from, Content: channel.Content{Text: "x"}}
		if err := w.Post(&m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	if got := unread(root, "dev", "ann", nil); got != 2 {
		t.Errorf("no cursor: %d, want 2 (ann's own left out)", got)
	}
	if got := unread(root, "dev", "ann", ids[:1]); got != 1 {
		t.Errorf("cursor at the first: %d, want 1 (cat)", got)
	}
	if got := unread(root, "dev", "ann", ids); got != 0 {
		t.Errorf("cursor at all: %d, want 0", got)
	}
	for range maxUnread + 5 {
		if err := w.Post(&channel.Message{SessionID: "dev", From: "bob", Content: channel.Content{Text: "y"}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := unread(root, "dev", "ann", ids); got != maxUnread+1 {
		t.Errorf("flood: %d, want %d (the cap)", got, maxUnread+1)
	}
}
