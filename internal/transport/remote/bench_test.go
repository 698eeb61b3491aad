package remote

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"collab/channel"
	"collab/internal/identity/keyring"
	"collab/internal/identity/signing"
	"collab/internal/plumbing/tree"
	"collab/internal/testsupport/natstest"
	"collab/internal/transport/bridge"
	"collab/internal/transport/natsbus"
)

// BenchmarkRemotePost: one signed post through the outbox and a bridge
// on loopback NATS into a tree on the local disk, acknowledged.
func BenchmarkRemotePost(b *testing.B) {
	url := natstest.Start(b, false, nil).URL()
	root := tree.Root(b.TempDir())
	if err := os.Mkdir(root.Channels(), 0o700); err != nil {
		b.Fatal(err)
	}
	signer, err := signing.NewKey(filepath.Join(b.TempDir(), "a.key"), "a", false)
	if err != nil {
		b.Fatal(err)
	}
	ring := keyring.Open(root.Keys())
	if err := ring.Trust("a", signer.PublicKey()); err != nil {
		b.Fatal(err)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := bridge.New(bridge.Config{Root: root, Verifier: signing.NewVerifier(ring)})
	go srv.Serve(ctx, nc)
	for nc.NumSubscriptions() == 0 {
		time.Sleep(time.Millisecond)
	}
	nc.Flush()
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
