package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestLastAnswer: the checker's Last is when the last acked message got
// its first reply, the later of the reply's own time and when its file
// was written (a reply carried late by a bridge lands after its time).
func TestLastAnswer(t *testing.T) {
	root := tree.Root(t.TempDir())
	t0 := time.Date(2026, 1, 11, 16, 33, 15, 0, time.UTC)
	clock := t0
	w := &channel.Writer{Root: root, Now: func() time.Time { clock = clock.Add(time.Second); return clock }}
	acks := make(map[string]ack)
	var replies []channel.Message
	for _, text := range []string{"one", "two"} {
		m := channel.Message{SessionID: chanName, From: sender, To: agent, Content: channel.Content{Text: text}}
		if err := w.Post(&m); err != nil {
			t.Fatal(err)
		}
		acks[m.ID] = ack{ID: m.ID, Text: text, At: m.Time()}
		r := channel.Message{SessionID: chanName, From: agent, To: sender, Content: channel.Content{Text: expectedReply(m.ID, text)},
			Metadata: channel.Metadata{InReplyTo: m.ID, Hops: 1}}
		if err := w.Post(&r); err != nil {
			t.Fatal(err)
		}
		replies = append(replies, r)
	}
	dir := root.Channel(chanName)
	// Both files written long ago: Last is the second reply's own time.
	old := t0.Add(-time.Hour)
	for _, r := range replies {
		if err := os.Chtimes(filepath.Join(dir, r.ID+".json"), old, old); err != nil {
			t.Fatal(err)
		}
	}
	v, err := check(dir, chanName, agent, acks)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Last.Equal(replies[1].Time()) {
		t.Errorf("Last = %v, want the second reply's time %v", v.Last, replies[1].Time())
	}
	// The first reply landed late: Last is its file's time.
	late := t0.Add(time.Minute)
	if err := os.Chtimes(filepath.Join(dir, replies[0].ID+".json"), late, late); err != nil {
		t.Fatal(err)
	}
	if v, err = check(dir, chanName, agent, acks); err != nil {
		t.Fatal(err)
	}
	if !v.Last.Equal(late) {
		t.Errorf("Last = %v, want the late file's time %v", v.Last, late)
	}
}

// TestReportRecover: the table has a RECOVER column, "-" when the
// scenario recorded no healing.
func TestReportRecover(t *testing.T) {
	at := time.Date(2026, 1, 11, 16, 33, 15, 0, time.UTC)
	results := []result{
		{ID: "2", Name: "healed", Healed: at, Recover: 1234 * time.Millisecond, Verdict: verdict{Messages: 3, OK: 3, Last: at.Add(1234 * time.Millisecond)}},
		{ID: "8", Name: "never healed", Verdict: verdict{Messages: 3, OK: 3, Last: at}},
	}
	var out bytes.Buffer
	report(&out, results, time.Second)
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], "P50  RECOVER  TOOK") {
		t.Fatalf("header %q has no RECOVER column between P50 and TOOK", lines[0])
	}
	col := strings.Index(lines[0], "RECOVER")
	for i, want := range []string{"1.234s", "-"} {
		if got := strings.Fields(lines[i+1][col:])[0]; got != want {
			t.Errorf("row %d: RECOVER %q, want %q\n%s", i+1, got, want, out.String())
		}
	}
}

// TestRecover: the time to recover is the longest wait past the later of
// the healing and the message's own send.
func TestRecover(t *testing.T) {
	h := time.Date(2026, 1, 11, 16, 33, 15, 0, time.UTC)
	v := verdict{answers: []answerAt{
		{h.Add(-5 * time.Second), h.Add(-4 * time.Second)},                      // answered before the heal
		{h.Add(-3 * time.Second), h.Add(2 * time.Second)},                       // sent before, answered 2 s after
		{h.Add(10 * time.Second), h.Add(10*time.Second + 300*time.Millisecond)}, // sent later: its latency
	}}
	if got := v.recover(h); got != 2*time.Second {
		t.Errorf("recover = %v, want 2s", got)
	}
	if got := (verdict{answers: v.answers[:1]}).recover(h); got != 0 {
		t.Errorf("recover with all answered before the heal = %v, want 0", got)
	}
}
