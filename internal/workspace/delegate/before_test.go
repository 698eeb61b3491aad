package delegate_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

// TestWaitWithReadsOnlyWhatArrives: a wait set up with Before, on a
// channel holding 40 messages of 512 KB from the last half hour, reads
// none of them (Wait alone reads them all: over 20 MB), and still finds a
// reply named 10 minutes before the request (a host whose clock is
// behind), past an unrelated message.
func TestWaitWithReadsOnlyWhatArrives(t *testing.T) {
	root := tree.Root(t.TempDir())
	big := strings.Repeat("x", 512<<10)
	now := time.Now()
	for i := range 40 {
		w := &channel.Writer{Root: root, Now: func() time.Time { return now.Add(-30*time.Minute + time.Duration(i)*time.Second) }}
		if err := w.Post(&channel.Message{SessionID: "dev", From: "gemini", Content: channel.Content{Text: big}}); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := delegate.Before(root, "dev", delegate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := ask(t, root)
	post(t, root, channel.Message{From: "codex", Content: channel.Content{Text: "unrelated"}})
	want := reply(t, root, "codex", q.ID, now.Add(-10*time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	got, err := delegate.WaitWith(ctx, r, q.ID, delegate.Options{NotFrom: "lead", Poll: time.Millisecond})
	runtime.ReadMemStats(&after)
	if err != nil || got.ID != want.ID {
		t.Fatalf("WaitWith = %s, %v; want %s", got.ID, err, want.ID)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Errorf("the wait allocated %d bytes: it read the messages already in the channel", n)
	}
}

// BenchmarkSendWait: the first look of a wait on a channel of 2,000
// messages from the last hour: Before and the first scan (the request
// posted in between).
func BenchmarkSendWait(b *testing.B) {
	root := tree.Root(b.TempDir())
	now := time.Now()
	w := &channel.Writer{Root: root}
	for i := range 2000 {
		w.Now = func() time.Time { return now.Add(-40*time.Minute + time.Duration(i)*time.Second) }
		if err := w.Post(&channel.Message{SessionID: "dev", From: "gemini", Content: channel.Content{Text: "old"}}); err != nil {
			b.Fatal(err)
		}
	}
	w.Now = nil
	q := channel.Message{SessionID: "dev", From: "lead", Content: channel.Content{Text: "q"}}
	if err := w.Post(&q); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // one scan, then the context's error
	b.Run("Wait", func(b *testing.B) {
		for b.Loop() {
			delegate.Wait(ctx, root, "dev", q.ID, delegate.Options{})
		}
	})
	b.Run("Before+WaitWith", func(b *testing.B) {
		for b.Loop() {
			r, err := delegate.Before(root, "dev", delegate.Options{})
			if err != nil {
				b.Fatal(err)
			}
			delegate.WaitWith(ctx, r, q.ID, delegate.Options{})
		}
	})
}
