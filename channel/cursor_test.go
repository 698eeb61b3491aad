package channel_test

import (
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
)

// TestCursorAdd: Add moves the floor as a Reader does (the newest name, or
// now if earlier, less the skew window) and drops the names below it;
// Unread is the cursor's own test of a name.
func TestCursorAdd(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	name := func(d time.Duration, hex string) string { return channel.NewID("a", t0.Add(d), hex) + ".json" }
	opt := channel.ReaderOptions{SkewWindow: time.Hour, Now: func() time.Time { return t0.Add(2 * time.Hour) }}
	cur := channel.Cursor{}.Add(opt, name(0, "0001"), name(90*time.Minute, "0002"), "not-a-name")
	if want := t0.Add(30 * time.Minute); !cur.Floor.Equal(want) {
		t.Errorf("floor %v, want %v (the newest name less the window)", cur.Floor, want)
	}
	if len(cur.Seen) != 1 || cur.Seen[0] != name(90*time.Minute, "0002") {
		t.Errorf("seen %v: want only the name above the floor", cur.Seen)
	}
	unread := cur.Unread()
	for _, c := range []struct {
		name string
		want bool
	}{
		{name(0, "0003"), false},              // below the floor
		{name(90*time.Minute, "0002"), false}, // acknowledged
		{name(60*time.Minute, "0004"), true},  // late, within the window
		{name(120*time.Minute, "0005"), true}, // new
	} {
		nm, err := channel.ParseName(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := unread(c.name, nm); got != c.want {
			t.Errorf("Unread(%s) = %v, want %v", c.name, got, c.want)
		}
	}
	// A clock behind the newest name holds the floor back.
	early := channel.ReaderOptions{SkewWindow: time.Hour, Now: func() time.Time { return t0 }}
	if cur := (channel.Cursor{}).Add(early, name(90*time.Minute, "0002")); !cur.Floor.Equal(t0.Add(-time.Hour)) {
		t.Errorf("floor %v with the clock at %v", cur.Floor, t0)
	}
}
