package mcpserver

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestServeStdio: ServeStdio answers a client on its input and output,
// returns nil when the input ends, and logs the session's end; a Config
// New refuses is refused before anything is served.
func TestServeStdio(t *testing.T) {
	var logs, out bytes.Buffer
	cfg := Config{Root: tree.Root(t.TempDir()), Agent: "claude", Channel: "dev", Hops: -1,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n")
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := ServeStdio(ctx, cfg, in, &out); err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	if !strings.Contains(out.String(), `"id":1`) || !strings.Contains(out.String(), `"result"`) {
		t.Errorf("no answer to initialize: %q", out.String())
	}
	if !strings.Contains(logs.String(), "mcp session ended") || !strings.Contains(logs.String(), "agent=claude") {
		t.Errorf("the session's end is not logged: %q", logs.String())
	}
	cfg.Agent = "no body"
	if err := ServeStdio(ctx, cfg, strings.NewReader(""), &out); err == nil {
		t.Error("ServeStdio served an invalid agent")
	}
}
