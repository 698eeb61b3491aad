package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestServeStdio: ServeStdio answers a client on its input and output,
// returns nil when the input ends, and logs the session's end; a Config
// New refuses is refused before anything is served.
func TestServeStdio(t *testing.T) {
	var logs bytes.Buffer
	cfg := Config{Root: tree.Root(t.TempDir()), Agent: "claude", Channel: "dev", Hops: -1,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	// The client writes initialize, reads the answer, then ends its
	// input: the answer is awaited, not raced against the end.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- ServeStdio(ctx, cfg, inR, outW); outW.Close() }()
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`+"\n")
	answer, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || !strings.Contains(answer, `"id":1`) || !strings.Contains(answer, `"result"`) {
		t.Errorf("no answer to initialize: %q, %v", answer, err)
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	if err := <-served; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	if !strings.Contains(logs.String(), "mcp session ended") || !strings.Contains(logs.String(), "agent=claude") {
		t.Errorf("the session's end is not logged: %q", logs.String())
	}
	cfg.Agent = "no body"
	if err := ServeStdio(ctx, cfg, strings.NewReader(""), io.Discard); err == nil {
		t.Error("ServeStdio served an invalid agent")
	}
}
