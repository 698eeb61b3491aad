package remote

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// bridgeOnLoopback starts an embedded NATS server and a bridge serving a
// fresh tree in which agent a's key is trusted; it returns the tree, the
// URL and a's signer.
func bridgeOnLoopback(tb testing.TB) (tree.Root, string, *signing.Signer) {
	tb.Helper()
	url := natstest.Start(tb, false, nil).URL()
	root := tree.Root(tb.TempDir())
	if err := os.Mkdir(root.Channels(), 0o700); err != nil {
		tb.Fatal(err)
	}
	signer, err := signing.NewKey(filepath.Join(tb.TempDir(), "a.key"), "a", false)
	if err != nil {
		tb.Fatal(err)
	}
	ring := keyring.Open(root.Keys())
	if err := ring.Trust("a", signer.PublicKey()); err != nil {
		tb.Fatal(err)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := bridge.New(bridge.Config{Root: root, Verifier: signing.NewVerifier(ring)})
	done := make(chan struct{})
	go func() { srv.Serve(ctx, nc); close(done) }()
	tb.Cleanup(func() { cancel(); <-done; nc.Close() })
	for nc.NumSubscriptions() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := nc.Flush(); err != nil {
		tb.Fatal(err)
	}
	return root, url, signer
}

// BenchmarkRemotePost: one signed post through the outbox and a bridge
// on loopback NATS into a tree on the local disk, acknowledged.
func BenchmarkRemotePost(b *testing.B) {
	_, url, signer := bridgeOnLoopback(b)
	ctx := context.Background()
	c, err := Dial(ctx, natsbus.Options{URL: url}, Config{Agent: "a", Signer: signer, StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Post(ctx, &channel.Message{SessionID: "dev", Content: channel.Content{Text: "bench"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// lostReply is a Requester whose first reply is lost after the bridge
// performed the request.
type lostReply struct {
	r    Requester
	lost bool
}

func (l *lostReply) Request(ctx context.Context, subject string, data []byte) ([]byte, error) {
	out, err := l.r.Request(ctx, subject, data)
	if err == nil && !l.lost {
		l.lost = true
		return nil, context.DeadlineExceeded
	}
	return out, err
}

// TestLostReplyOnce: the bridge wrote the message but its reply was lost;
// the entry stays, and the flush that resends it gets "existed" from the
// real bridge: one file, the same id, no new name.
func TestLostReplyOnce(t *testing.T) {
	root, url, signer := bridgeOnLoopback(t)
	ctx := context.Background()
	d, err := Dial(ctx, natsbus.Options{URL: url}, Config{Agent: "a", Signer: signer, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := New(Config{Agent: "a", Signer: signer, StateDir: t.TempDir(), Requester: &lostReply{r: d.cfg.Requester}})
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Post(ctx, &channel.Message{SessionID: "dev", Content: channel.Content{Text: "once"}})
	if !errors.Is(err, ErrQueued) {
		t.Fatalf("Post: %v, want queued", err)
	}
	res := c.Flush(ctx)
	if res.Err != nil || len(res.Sent) != 1 || len(res.Refused) != 0 || postID(res.Sent[0]) != id {
		t.Fatalf("Flush: %+v", res)
	}
	msgs, _, err := channel.ReadAll(root, "dev", channel.ReaderOptions{})
	if err != nil || len(msgs) != 1 || msgs[0].ID != id {
		t.Fatalf("channel: %v, %d messages, want one %s", err, len(msgs), id)
	}
}
