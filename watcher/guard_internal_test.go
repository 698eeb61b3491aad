package watcher

import (
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 11, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, tt := range []struct {
		name  string
		limit int
		adds  []time.Duration
		now   time.Duration
		want  bool
	}{
		{name: "empty", limit: 2, now: 0, want: true},
		{name: "under the limit", limit: 2, adds: []time.Duration{0}, now: time.Second, want: true},
		{name: "at the limit", limit: 2, adds: []time.Duration{0, time.Second}, now: 2 * time.Second, want: false},
		{name: "oldest leaves the window", limit: 2, adds: []time.Duration{0, time.Second}, now: time.Minute, want: true},
		{name: "just inside the window", limit: 2, adds: []time.Duration{0, time.Second}, now: time.Minute - time.Nanosecond, want: false},
		{name: "no limit", limit: 0, adds: []time.Duration{0, 0, 0}, now: 0, want: true},
		{name: "negative limit", limit: -1, adds: []time.Duration{0, 0, 0}, now: 0, want: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWindow(time.Minute, tt.limit)
			for _, d := range tt.adds {
				w.add(at(d))
			}
			if got := w.allow(at(tt.now)); got != tt.want {
				t.Errorf("allow = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGuardsPair(t *testing.T) {
	t0 := time.Date(2026, 1, 11, 12, 0, 0, 0, time.UTC)
	g := newGuards(6, 20, 2)
	for range 5 {
		if !g.pairAllowed("alice", 0, t0) {
			t.Fatal("a person's message (hops 0) was refused")
		}
		g.replied("alice", 0, t0)
	}
	for i := range 2 {
		if !g.pairAllowed("bot", 1, t0) {
			t.Fatalf("reply %d to bot refused, want 2 allowed", i+1)
		}
		g.replied("bot", 1, t0)
	}
	if g.pairAllowed("bot", 3, t0) {
		t.Error("a third reply to bot within the minute was allowed")
	}
	if !g.pairAllowed("claude", 1, t0) {
		t.Error("another sender was refused")
	}
	if !g.pairAllowed("bot", 1, t0.Add(time.Minute)) {
		t.Error("bot still refused a minute later")
	}
}

func TestGuardsNotice(t *testing.T) {
	t0 := time.Date(2026, 1, 11, 12, 0, 0, 0, time.UTC)
	g := newGuards(6, 20, 6)
	if !g.notice("t1", t0) {
		t.Fatal("first notice refused")
	}
	if g.notice("t1", t0.Add(time.Hour)) {
		t.Error("second notice in the same thread allowed")
	}
	if !g.notice("t2", t0.Add(time.Hour)) {
		t.Error("notice in another thread refused")
	}
	// A day later t1 is forgotten (memory is bounded) and may get one more.
	g.notice("t3", t0.Add(26*time.Hour))
	if !g.notice("t1", t0.Add(26*time.Hour)) {
		t.Error("a thread quiet for a day still refused a notice")
	}
	if len(g.noticed) != 2 { // t1 again and t3; t2 is 25 h old
		t.Errorf("noticed = %v, want t1 and t3 only", g.noticed)
	}
}
