package delegate_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

// hangGuard bounds a test that must not hang; it is not a latency check.
const hangGuard = 60 * time.Second

func post(t *testing.T, root tree.Root, m channel.Message) channel.Message {
	t.Helper()
	m.SessionID = "dev"
	w := &channel.Writer{Root: root}
	if err := w.Post(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func ask(t *testing.T, root tree.Root) channel.Message {
	return post(t, root, channel.Message{From: "lead", To: "codex", Content: channel.Content{Text: "review please"}})
}

func reply(t *testing.T, root tree.Root, from, to string, at time.Time) channel.Message {
	t.Helper()
	w := &channel.Writer{Root: root, Now: func() time.Time { return at }}
	m := channel.Message{SessionID: "dev", From: from, Content: channel.Content{Text: "done: " + from},
		Metadata: channel.Metadata{InReplyTo: to}}
	if err := w.Post(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWaitReturnsTheReply(t *testing.T) {
	tests := []struct {
		name    string
		opt     delegate.Options
		replies []string // senders, in order; the last one is wanted
		skew    time.Duration
	}{
		{"any reply", delegate.Options{}, []string{"codex"}, 0},
		{"only from", delegate.Options{From: "codex"}, []string{"gemini", "codex"}, 0},
		{"not from self", delegate.Options{NotFrom: "lead"}, []string{"lead", "codex"}, 0},
		{"reply from a slow clock", delegate.Options{}, []string{"codex"}, -10 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree.Root(t.TempDir())
			q := ask(t, root)
			post(t, root, channel.Message{From: "codex", Content: channel.Content{Text: "unrelated"}})
			for _, from := range tt.replies {
				reply(t, root, from, q.ID, time.Now().Add(tt.skew))
			}
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			got, err := delegate.Wait(ctx, root, "dev", q.ID, tt.opt)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.replies[len(tt.replies)-1]
			if got.From != want || got.Metadata.InReplyTo != q.ID {
				t.Errorf("got a reply from %s to %s; want one from %s to %s", got.From, got.Metadata.InReplyTo, want, q.ID)
			}
		})
	}
}

// TestWaitForALaterReply: the reply arrives while Wait is polling (on a
// synctest bubble's clock).
func TestWaitForALaterReply(t *testing.T) { synctest.Test(t, testWaitForALaterReply) }

func testWaitForALaterReply(t *testing.T) {
	root := tree.Root(t.TempDir())
	q := ask(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	started := make(chan struct{})
	done := make(chan error, 1)
	var got channel.Message
	go func() {
		close(started)
		var err error
		got, err = delegate.Wait(ctx, root, "dev", q.ID, delegate.Options{Poll: 10 * time.Millisecond, NotFrom: "lead"})
		done <- err
	}()
	<-started
	r := reply(t, root, "codex", q.ID, time.Now())
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got.ID != r.ID {
		t.Errorf("got %s, want %s", got.ID, r.ID)
	}
}

// TestWakeScansAtOnce: with polling practically off, a wake is what makes
// Wait look again and find the reply.
func TestWakeScansAtOnce(t *testing.T) {
	root := tree.Root(t.TempDir())
	q := ask(t, root)
	wake := make(chan string) // unbuffered: a send completes only when Wait listens
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	done := make(chan channel.Message, 1)
	go func() {
		m, err := delegate.Wait(ctx, root, "dev", q.ID, delegate.Options{Poll: time.Hour, Wake: wake})
		if err != nil {
			t.Error(err)
		}
		done <- m
	}()
	// Wait takes this once its first scan has found nothing.
	select {
	case wake <- "msg-20200101-000000-x-abcd.json":
	case <-ctx.Done():
		t.Fatal("Wait never listened for wake-ups")
	}
	r := reply(t, root, "codex", q.ID, time.Now())
	var got channel.Message
	select {
	case wake <- r.File:
		got = <-done
	case got = <-done: // the scan after the first wake-up found it
	}
	if got.ID != r.ID {
		t.Errorf("got %q, want %s", got.ID, r.ID)
	}
}

// TestWaitTimesOut runs on a synctest bubble's clock: the timeout passes
// as soon as Wait sleeps.
func TestWaitTimesOut(t *testing.T) { synctest.Test(t, testWaitTimesOut) }

func testWaitTimesOut(t *testing.T) {
	root := tree.Root(t.TempDir())
	q := ask(t, root)
	reply(t, root, "gemini", "msg-20200101-000000-x-abcd", time.Now()) // a reply to something else
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := delegate.Wait(ctx, root, "dev", q.ID, delegate.Options{Poll: 10 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait = %v, want DeadlineExceeded", err)
	}
}

func TestWaitRefusesBadInput(t *testing.T) {
	root := tree.Root(t.TempDir())
	ctx := context.Background()
	for _, c := range []struct{ ch, id string }{{"../x", "msg-20200101-000000-x-abcd"}, {"dev", "../../etc/passwd"}} {
		if _, err := delegate.Wait(ctx, root, c.ch, c.id, delegate.Options{}); err == nil {
			t.Errorf("Wait(%q, %q) succeeded", c.ch, c.id)
		}
	}
	if _, err := delegate.Wait(ctx, root, "dev", "msg-20200101-000000-x-abcd", delegate.Options{From: "a b"}); err == nil {
		t.Error("Wait with a bad From succeeded")
	}
}
