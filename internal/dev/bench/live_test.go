package main

import (
	"testing"
	"time"

	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

func TestUnion(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name  string
		spans []span
		want  time.Duration
	}{
		{"none", nil, 0},
		{"one", []span{{at(0), at(10)}}, 10 * time.Millisecond},
		{"apart", []span{{at(20), at(25)}, {at(0), at(10)}}, 15 * time.Millisecond},
		{"overlapping", []span{{at(0), at(10)}, {at(5), at(12)}}, 12 * time.Millisecond},
		{"inside", []span{{at(0), at(10)}, {at(2), at(3)}}, 10 * time.Millisecond},
		{"empty", []span{{at(5), at(5)}, {at(9), at(3)}}, 0},
	}
	for _, tt := range tests {
		if got := union(tt.spans); got != tt.want {
			t.Errorf("%s: union = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestLiveNote: a message's overhead is its time less the model's, and
// its parts add up to its time.
func TestLiveNote(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(100, 0).Add(time.Duration(ms) * time.Millisecond) }
	reqs := []fakemodel.Request{
		{Arrived: at(40), Ended: at(60)},
		{Arrived: at(55), Ended: at(70)},
		{Arrived: at(80)}, // cut short: not the model's time
	}
	calls := []span{{at(10), at(90)}}
	events := []span{{at(12), at(15)}, {at(85), at(86)}, {at(50), at(52)}}
	var r liveResult
	r.note(at(0), at(100), reqs, calls, events)
	if len(r.overhead) != 1 || r.overhead[0] != 70*time.Millisecond {
		t.Fatalf("overhead %v, want 70ms (100 less the model's 30)", r.overhead)
	}
	want := []time.Duration{10, 3, 27, 30, 19, 1, 10}
	var sum time.Duration
	for i, w := range want {
		if len(r.parts[i]) != 1 || r.parts[i][0] != w*time.Millisecond {
			t.Errorf("%s: %v, want %v", liveParts[i], r.parts[i], w*time.Millisecond)
		}
		if len(r.parts[i]) == 1 {
			sum += r.parts[i][0]
		}
	}
	if sum != 100*time.Millisecond {
		t.Errorf("parts add up to %v, want the message's 100ms", sum)
	}
	// A redone turn (two calls) has an overhead but no breakdown.
	r.note(at(0), at(100), reqs, append(calls, calls...), nil)
	if len(r.overhead) != 2 || len(r.parts[0]) != 1 {
		t.Errorf("redone: %d overheads, %d breakdowns", len(r.overhead), len(r.parts[0]))
	}
}
