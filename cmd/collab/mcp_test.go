package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"collab/channel"
	"collab/tree"
)

// TestMCPOverStdio: `collab mcp` speaks MCP on its standard input and
// output to the SDK's client; what it sends is from --agent, one hop
// deeper than COLLAB_HOPS.
func TestMCPOverStdio(t *testing.T) {
	root := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr syncBuffer
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_HOPS": "1"}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"mcp", "--agent", "claude", "--channel", "dev"}, func(k string) string { return env[k] }, inR, outW, &stderr)
		outW.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) < 8 {
		t.Fatalf("tools: %v, %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "channel_send", Arguments: map[string]any{"message": "hello from mcp", "to": "codex"}})
	if err != nil || res.IsError {
		t.Fatalf("channel_send: %+v, %v", res, err)
	}
	cs.Close()
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("collab mcp: %v (stderr %q)", err, stderr.String())
	}
	msgs, _, err := channel.ReadAll(tree.Root(root), "dev", channel.ReaderOptions{})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("channel: %v, %v", msgs, err)
	}
	if m := msgs[0]; m.From != "claude" || m.To != "codex" || m.Content.Text != "hello from mcp" || m.Metadata.Hops != 2 {
		t.Errorf("sent %+v; want claude to codex at hops 2", m)
	}
}

func TestMCPUsage(t *testing.T) {
	for _, args := range [][]string{
		{"mcp"},
		{"mcp", "--agent", "claude"},
		{"mcp", "--agent", "../x", "--channel", "dev"},
		{"mcp", "--agent", "claude", "--channel", "dev", "extra"},
	} {
		r := runCollab(t, map[string]string{"COLLAB_ROOT": t.TempDir()}, "", args...)
		if r.code != 2 || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q; want 2 and nothing on stdout", args, r.code, r.stdout)
		}
	}
	r := runCollab(t, nil, "", "mcp", "--help")
	if r.code != 0 || !strings.Contains(r.stderr, "--mcp-config") {
		t.Errorf("mcp --help: exit %d, %q", r.code, r.stderr)
	}
}
