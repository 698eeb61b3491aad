package mcpserver

import (
	"context"
	"crypto/ed25519"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestSignsAndVerifies: with a signer the server signs what its agent
// posts, and the reads give each message's verdict.
func TestSignsAndVerifies(t *testing.T) {
	root := tree.Root(t.TempDir())
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(t.TempDir())
	if err := ring.Trust("claude", keyring.FormatPublic(pub)); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Root: root, Agent: "claude", Channel: "dev", Hops: -1,
		Signer: signing.NewSigner("claude", priv), Verifier: signing.NewVerifier(ring)}
	if _, err := New(Config{Root: root, Agent: "codex", Channel: "dev", Signer: cfg.Signer}); err == nil {
		t.Errorf("New took claude's key for codex")
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		cs.Close()
		cancel()
		<-done
	}()

	// A forgery in claude's name, unsigned, and a keyless sender.
	w := &channel.Writer{Root: root}
	for _, from := range []string{"claude", "human"} {
		if err := w.Post(&channel.Message{SessionID: "dev", From: from, Content: channel.Content{Text: "from " + from}}); err != nil {
			t.Fatal(err)
		}
	}
	var sent SendResult
	if e := call(t, cs, "channel_send", map[string]any{"message": "signed"}, &sent); e != "" {
		t.Fatal(e)
	}
	m, err := channel.Lookup(root, "dev", sent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.Signature == nil || m.Verify(cfg.Verifier, "dev") != signing.Verified {
		t.Fatalf("channel_send wrote %+v; want it signed by claude's key", m)
	}
	for _, tool := range []string{"channel_peek", "channel_read"} {
		var res struct {
			Messages []struct{ From, Text, Verdict string }
		}
		if e := call(t, cs, tool, nil, &res); e != "" {
			t.Fatal(e)
		}
		got := map[string]string{}
		for _, m := range res.Messages {
			got[m.Text] = m.Verdict
		}
		want := map[string]string{"from claude": "unsigned", "from human": "unsigned", "signed": "verified"}
		if len(got) != len(want) {
			t.Fatalf("%s: %+v", tool, res.Messages)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %q has verdict %q, want %q", tool, k, got[k], v)
			}
		}
	}
}
