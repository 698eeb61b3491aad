package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/bridge"
)

// TestBridgeCommand: collab bridge serves a signed post from a raw NATS
// request, publishes it to the stream, and stops cleanly on its context.
func TestBridgeCommand(t *testing.T) {
	url := natsServer(t)
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "NATS_URL": url}
	if r := runCollab(t, env, "", "bridge", "--nats", ""); r.code != exitUsage || !strings.Contains(r.stderr, "no server") {
		t.Fatalf("bridge without a server: exit %d %q", r.code, r.stderr)
	}
	if r := runCollab(t, env, "", "nats", "init"); r.code != 0 {
		t.Fatalf("nats init: %q", r.stderr)
	}
	key, err := signing.NewKey(filepath.Join(t.TempDir(), "alice.key"), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := keyring.Open(tree.Root(root).Keys()).Trust("alice", key.PublicKey()); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- runCollabCtx(t, ctx, env, "", "bridge", "--workers", "2") }()

	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	now := time.Now().UTC()
	m := channel.Message{ID: channel.NewID("alice", now, "beef"), Timestamp: now.Format(channel.TimeFormat),
		SessionID: "dev", From: "alice", To: "all", Type: "chat", Content: channel.Content{Text: "from a laptop"}}
	m.Signature = key.Sign(m.Payload())
	raw, _ := m.Encode()
	body, _ := json.Marshal(bridge.PostRequest{Channel: "dev", Message: raw})
	var reply *nats.Msg
	for range 250 { // until the bridge has subscribed
		reply, err = nc.Request(bridge.RequestSubject(bridge.OpPost, "alice"), body, 5*time.Second)
		if err != nats.ErrNoResponders {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || !strings.Contains(string(reply.Data), `"ok":true`) {
		t.Fatalf("post: %v %s", err, reply.Data)
	}
	if r := runCollab(t, env, "", "read", "--channel", "dev"); !strings.Contains(r.stdout, "from a laptop") {
		t.Fatalf("read: %q %q", r.stdout, r.stderr)
	}
	var r result
	for range 250 { // the publisher's next poll
		if r = runCollab(t, env, "", "nats", "parity", "--channel", "dev"); r.code == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(r.stdout, "1 files, 1 in the stream") {
		t.Fatalf("parity: exit %d %q", r.code, r.stdout)
	}
	cancel()
	if r := <-done; r.code != 0 {
		t.Fatalf("bridge: exit %d %q", r.code, r.stderr)
	}
}
