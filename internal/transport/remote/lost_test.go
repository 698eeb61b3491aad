package remote

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
)

// diedWithRequest is a Requester whose first request is handed to a
// bridge that dies before answering (it never returns before its
// context ends); the next ones are answered ok.
type diedWithRequest struct {
	mu    sync.Mutex
	calls int
}

func (d *diedWithRequest) Request(ctx context.Context, subject string, data []byte) ([]byte, error) {
	d.mu.Lock()
	d.calls++
	first := d.calls == 1
	d.mu.Unlock()
	if first {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return ok(subject, data)
}

// TestRequestLostWithItsBridge: a request lost with a killed bridge is
// sent again well within the request timeout, so a post (and a remote
// watcher's claim, also a request) goes through the bridge that answers
// instead of waiting out the whole timeout and being queued.
func TestRequestLostWithItsBridge(t *testing.T) {
	signer, err := signing.NewKey(t.TempDir()+"/a.key", "a", false)
	if err != nil {
		t.Fatal(err)
	}
	d := &diedWithRequest{}
	c, err := New(Config{Agent: "a", Signer: signer, StateDir: t.TempDir(), Requester: d})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := c.Post(context.Background(), &channel.Message{SessionID: "dev", Content: channel.Content{Text: "hi"}}); err != nil {
		t.Fatalf("Post after a request lost with its bridge: %v (after %v), want posted by the next attempt", err, time.Since(t0))
	}
	if took := time.Since(t0); took >= DefaultTimeout {
		t.Errorf("Post took %v, the whole request timeout", took)
	}
	if d.calls != 2 {
		t.Errorf("%d attempts, want 2", d.calls)
	}
}
