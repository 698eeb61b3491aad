package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestMCPOverStdio: `collab mcp` speaks MCP on its standard input and
// output to the SDK's client; what it sends is from --agent, one hop
// deeper than COLLAB_HOPS.
func TestMCPOverStdio(t *testing.T) {
	root := newTree(t)
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
	if err != nil || len(tools.Tools) != 27 {
		t.Fatalf("tools: %v, %v; want the 16 of issue 7, task_context, job_list, job_show, message_status, task_add, task_retry, document_delete and the 4 delegation tools", tools, err)
	}
	// --help lists every tool.
	help := runCollab(t, nil, "", "mcp", "--help").stderr
	for _, tool := range tools.Tools {
		if !strings.Contains(help, "\n  "+tool.Name+" ") {
			t.Errorf("mcp --help does not list %s", tool.Name)
		}
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
		r := runCollab(t, map[string]string{"COLLAB_ROOT": newTree(t)}, "", args...)
		if r.code != 2 || r.stdout != "" {
			t.Errorf("%q: exit %d, stdout %q; want 2 and nothing on stdout", args, r.code, r.stdout)
		}
	}
	r := runCollab(t, nil, "", "mcp", "--help")
	if r.code != 0 || !strings.Contains(r.stderr, "--mcp-config") {
		t.Errorf("mcp --help: exit %d, %q", r.code, r.stderr)
	}
}

// TestMCPMalformedLine: a line that is not a JSON-RPC message is answered
// with a JSON-RPC error whose id is null (parse error for a line that is not
// JSON), and the session goes on.
func TestMCPMalformedLine(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	env := map[string]string{"COLLAB_ROOT": newTree(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var stderr syncBuffer
		done <- run(ctx, []string{"mcp", "--agent", "claude", "--channel", "dev"}, func(k string) string { return env[k] }, inR, outW, &stderr)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	exchange := func(in string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, in+"\n"); err != nil {
			t.Fatalf("write %q: %v", in, err)
		}
		if !lines.Scan() {
			t.Fatalf("after %q: no answer (%v); the session ended", in, lines.Err())
		}
		var got map[string]any
		if err := json.Unmarshal(lines.Bytes(), &got); err != nil {
			t.Fatalf("answer %q: %v", lines.Text(), err)
		}
		return got
	}
	wantError := func(in string, code float64) {
		t.Helper()
		got := exchange(in)
		e, _ := got["error"].(map[string]any)
		if id, ok := got["id"]; !ok || id != nil || e == nil || e["code"] != code {
			t.Errorf("answer to %q = %v; want error %v with id null", in, got, code)
		}
	}
	wantError(`{"jsonrpc":"2.0","id":1,"method":"initialize"`, -32700)
	wantError("\x1b[31mnot json", -32700)
	init := exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if init["id"] != float64(1) || init["result"] == nil {
		t.Fatalf("initialize = %v", init)
	}
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	wantError("42", -32600)
	wantError("[]", -32600)
	if got := exchange(`{"jsonrpc":"2.0","id":2,"method":"ping"}`); got["id"] != float64(2) || got["error"] != nil {
		t.Errorf("ping after malformed lines = %v", got)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("collab mcp: %v", err)
	}
}
