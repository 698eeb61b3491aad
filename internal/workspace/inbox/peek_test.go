package inbox

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
)

// TestPeekNewestReadsOnlyTheNewest: with 40 unread messages of 512 KB for
// the agent and 30 small ones after them, PeekNewest(5) returns the
// newest 5 for the agent (acknowledged and not-for-it ones left out) and
// reads little more than those: well under one of the big ones' worth per
// big message (Peek reads them all, over 20 MB).
func TestPeekNewestReadsOnlyTheNewest(t *testing.T) {
	root := t.TempDir()
	big := strings.Repeat("x", 512<<10)
	for i := range 40 {
		post(t, root, "dev", "claude", "codex", big, base.Add(time.Duration(i)*time.Second))
	}
	var mine []channel.Message
	for i := range 30 {
		to := "gemini"
		if i%2 == 0 {
			to = "codex"
		}
		m := post(t, root, "dev", "claude", to, "small", base.Add(time.Minute+time.Duration(i)*time.Second))
		if to == "codex" {
			mine = append(mine, m)
		}
	}
	b := newInbox(t, root, "codex")
	// The newest is acknowledged, the rest not.
	last := mine[len(mine)-1].ID + ".json"
	if err := b.save("dev", channel.Cursor{}, channel.Cursor{Seen: []string{last}}); err != nil {
		t.Fatal(err)
	}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, more, err := b.PeekNewest(5)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	want(t, "PeekNewest(5)", got, mine[len(mine)-6:len(mine)-1]...)
	// Unread and not read: the 40 big and the 18 small before the 5
	// (read: those 5 and the 6 for gemini after and between them).
	if more != 58 {
		t.Errorf("more = %d, want 58", more)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Errorf("PeekNewest(5) allocated %d bytes: it read the old messages", n)
	}
	all, err := b.Peek()
	if err != nil || len(all) != 40+14 {
		t.Errorf("Peek = %d items, %v; want 54", len(all), err)
	}
	if got, more, err := b.PeekNewest(100); err != nil || len(got) != 54 || more != 0 {
		t.Errorf("PeekNewest(100) = %d items, more %d, %v; want 54, 0", len(got), more, err)
	}
}
