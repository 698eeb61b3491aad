package mcpserver_test

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/mcpserver"
)

// A server for agent claude on channel dev, and the SDK's own client
// talking to it in memory: a model would do the same over stdio.
func Example() {
	root, _ := os.MkdirTemp("", "collab")
	defer os.RemoveAll(root)
	ctx := context.Background()
	s, err := mcpserver.New(mcpserver.Config{Root: tree.Root(root), Agent: "claude", Channel: "dev", Hops: -1})
	if err != nil {
		panic(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	go s.Run(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()

	call := func(name string, args map[string]any) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			panic(err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if res.IsError {
			fmt.Println(name, "failed:", text)
			return
		}
		fmt.Println(name, "ok")
	}
	call("document_create", map[string]any{"file": "notes.md", "content": "# Notes\n"})
	call("document_append", map[string]any{"content": "- auth: token not checked\n"})
	call("document_read", map[string]any{"file": "../secrets"})
	call("inbox_ack", map[string]any{"until": "yesterday"})
	// Output:
	// document_create ok
	// document_append ok
	// document_read failed: documents: invalid document path: "../secrets" has ".."; paths may not climb
	// inbox_ack failed: until "yesterday" is neither a message id (msg-…) nor an RFC 3339 time (2026-01-11T16:33:15Z)
}
