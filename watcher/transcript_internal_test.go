package watcher

import (
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
)

// TestRecent: the transcript memory keeps channel order (name time, JSON
// time, name) whatever order messages are read in, answers only when it
// holds enough messages named after the start, and forgets the oldest.
func TestRecent(t *testing.T) {
	start := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	msg := func(sec int, ms int, hex string) channel.Message {
		at := start.Add(time.Duration(sec) * time.Second)
		id := channel.NewID("bob", at, hex)
		return channel.Message{ID: id, File: id + ".json", From: "bob", Timestamp: at.Add(time.Duration(ms) * time.Millisecond).Format(time.RFC3339Nano)}
	}
	ids := func(ms []channel.Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	// In channel order: same second ordered by JSON time, then by name.
	ordered := []channel.Message{
		msg(1, 0, "ffff"),
		msg(2, 100, "ffff"),
		msg(2, 200, "0000"),
		msg(2, 200, "0001"),
		msg(3, 0, "0000"),
		msg(5, 0, "0000"),
	}
	r := newRecent(2, start) // keeps 4
	for _, i := range []int{4, 0, 3, 5, 1, 2} {
		r.add("c", &ordered[i])
	}
	r.add("c", &ordered[4]) // twice: kept once
	if got, want := ids(flatten(r.msgs["c"])), ids(ordered[2:]); !slices.Equal(got, want) {
		t.Errorf("kept %v, want the newest four in order %v", got, want)
	}
	tests := []struct {
		name string
		m    channel.Message
		n    int
		want []string
		ok   bool
	}{
		{"two before the newest", ordered[5], 2, ids(ordered[3:5]), true},
		{"same second, by JSON time then name", ordered[4], 2, ids(ordered[2:4]), true},
		{"a message not read yet", msg(4, 0, "aaaa"), 3, ids(ordered[2:5]), true},
		{"not enough kept", ordered[3], 2, nil, false},
		{"none wanted", ordered[0], 0, nil, true},
		{"other channel", ordered[5], 1, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := "c"
			if tt.name == "other channel" {
				ch = "d"
			}
			got, ok := r.before(ch, &tt.m, tt.n)
			if ok != tt.ok || !slices.Equal(ids(got), tt.want) {
				t.Errorf("before(%s, %d) = %v, %v; want %v, %v", tt.m.ID, tt.n, ids(got), ok, tt.want, tt.ok)
			}
		})
	}
	// Messages named in the second the watcher started, or before, may
	// have been in the folder unread: not trusted.
	late := newRecent(2, start.Add(2*time.Second+500*time.Millisecond))
	for i := range ordered {
		late.add("c", &ordered[i])
	}
	if got, ok := late.before("c", &ordered[5], 2); ok {
		t.Errorf("before with a message named in the start second = %v, want a fallback to the folder", ids(got))
	}
	if got, ok := late.before("c", &ordered[5], 1); !ok || !slices.Equal(ids(got), ids(ordered[4:5])) {
		t.Errorf("before the newest, one = %v, %v; want %v", ids(got), ok, ids(ordered[4:5]))
	}
}

func flatten(list []recentMsg) []channel.Message {
	var out []channel.Message
	for _, e := range list {
		out = append(out, e.m)
	}
	return out
}
