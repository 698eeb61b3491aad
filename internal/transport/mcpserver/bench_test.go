package mcpserver

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// BenchmarkTools measures one tool call through the SDK's client and
// server in memory (JSON-RPC, schema validation, the work): what a tool
// costs a model CLI beyond its stdio pipe. The channel holds 200 messages.
// Under bridge, every tool goes through a bridge on loopback NATS (collab
// mcp --remote), the tree on the local disk.
func BenchmarkTools(b *testing.B) {
	for _, via := range []string{"files", "bridge"} {
		b.Run(via, func(b *testing.B) { benchTools(b, via == "bridge") })
	}
}

func benchTools(b *testing.B, bridged bool) {
	root := tree.Root(b.TempDir())
	w := &channel.Writer{Root: root}
	for i := range 200 {
		if err := w.Post(&channel.Message{SessionID: "dev", From: "human", To: "claude", Content: channel.Content{Text: fmt.Sprint("message ", i)}}); err != nil {
			b.Fatal(err)
		}
	}
	cfg := Config{Root: root, Agent: "claude", Channel: "dev", Hops: -1}
	if bridged {
		cfg = bridgeConfig(b, cfg)
	}
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	go s.Run(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	call := func(b *testing.B, name string, args map[string]any) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("%s: %+v, %v", name, res, err)
		}
	}
	call(b, "inbox_check", nil)
	call(b, "document_create", map[string]any{"file": "notes.md", "content": "# Notes\n"})
	for _, bc := range []struct {
		name string
		args map[string]any
	}{
		{"who", nil},
		{"channel_send", map[string]any{"message": "hello"}},
		{"channel_peek", map[string]any{"limit": 10}},
		{"inbox_peek", nil},
		{"document_read", nil},
		{"document_append", map[string]any{"content": "x"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				call(b, bc.name, bc.args)
			}
		})
	}
}
