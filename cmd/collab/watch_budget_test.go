package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestWatchBudgetFlags: a negative --budget-tokens or --max-turns, and a
// --prices file (or COLLAB_PRICES) that is missing or not a price table,
// are usage errors.
func TestWatchBudgetFlags(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(bad, []byte(`{"models":{"gpt-5":{"input":-1}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"watch", "--agent", "codex", "--channel", "dev", "--cli", "command", "--cmd", os.Args[0]}
	tests := []struct {
		name string
		args []string
		env  string // COLLAB_PRICES
		want string
	}{
		{"negative token budget", []string{"--budget-tokens", "-1"}, "", "--budget-tokens"},
		{"negative turns", []string{"--max-turns", "-2"}, "", "--max-turns"},
		{"missing prices", []string{"--prices", bad + ".missing"}, "", "--prices"},
		{"bad prices", []string{"--prices", bad}, "", "negative price"},
		{"bad prices from the environment", nil, bad, "negative price"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := newTree(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			r := runCollabCtx(t, ctx, map[string]string{"COLLAB_ROOT": root, "COLLAB_PRICES": tt.env}, "", append(base, tt.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tt.want)
			}
		})
	}
}

// TestWatchBudgetCodex: `collab watch --cli codex --model gpt-5
// --budget-usd` trips on a codex that reports only tokens (a recorded
// transcript, 9547 tokens in and 4 out, about 0.012 USD at gpt-5's price):
// two messages are answered, the budget notice is posted and the third
// waits.
func TestWatchBudgetCodex(t *testing.T) {
	dir := t.TempDir()
	transcript, err := filepath.Abs(filepath.Join("..", "..", "internal", "agent", "modelcli", "testdata", "codex-exec.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "codex")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\ncat '"+transcript+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := newTree(t)
	startWatch(t, os.Args[0], root, "coder", nil, "--channel", "dev", "--cli", "codex", "--cmd", fake, "--model", "gpt-5", "--budget-usd", "0.02",
		"--session-scope", "none") // a resumed thread would count only what it added
	for _, text := range []string{"one", "two", "three"} {
		m := channel.Message{SessionID: "dev", From: "alice", To: "coder", Content: channel.Content{Text: text}}
		if err := (&channel.Writer{Root: tree.Root(root)}).Post(&m); err != nil {
			t.Fatal(err)
		}
		if text == "three" {
			break
		}
		waitFor(t, func() bool {
			msgs, _, _ := channel.ReadAll(tree.Root(root), "dev", channel.ReaderOptions{})
			for _, r := range msgs {
				if r.Metadata.InReplyTo == m.ID {
					return true
				}
			}
			return false
		})
	}
	var notice *channel.Message
	waitFor(t, func() bool {
		msgs, _, _ := channel.ReadAll(tree.Root(root), "dev", channel.ReaderOptions{})
		for i := range msgs {
			if msgs[i].Type == "notice" {
				notice = &msgs[i]
			}
		}
		return notice != nil
	})
	if !strings.Contains(notice.Content.Text, "of 0.02 USD") {
		t.Errorf("notice %q, want the USD budget", notice.Content.Text)
	}
	// The budget is checked before a run: once the notice is out, the
	// third message waits for the next UTC day.
	msgs, _, _ := channel.ReadAll(tree.Root(root), "dev", channel.ReaderOptions{})
	if replies := len(msgs) - 3 - 1; replies != 2 {
		t.Errorf("%d replies, want 2 (and the third message waiting)", replies)
	}
}

// TestWatchMaxTurns: --max-turns reaches Claude Code as its own flag; for
// codex, which has none, the watcher counts the tool calls of the run and
// fails it at the limit (the error reply says so with --post-errors).
func TestWatchMaxTurns(t *testing.T) {
	dir := t.TempDir()
	fixtures, err := filepath.Abs(filepath.Join("..", "..", "internal", "agent", "modelcli", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	script := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	argsFile := filepath.Join(dir, "claude.args")
	claudeBin := script("claude", "printf '%s\\n' \"$@\" > '"+argsFile+"'\ncat '"+filepath.Join(fixtures, "claude-stream.jsonl")+"'\n")
	var calls strings.Builder
	calls.WriteString(`echo '{"type":"thread.started","thread_id":"01a2018f-7a29-7411-a474-d826ea82ed17"}'` + "\n")
	for range 5 {
		calls.WriteString(`echo '{"type":"item.started","item":{"id":"i","type":"command_execution","command":"ls","status":"in_progress"}}'` + "\n")
	}
	calls.WriteString(`echo '{"type":"item.completed","item":{"id":"m","type":"agent_message","text":"done"}}'` + "\n")
	calls.WriteString(`echo '{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}'` + "\n")
	codexBin := script("codex", calls.String())

	ask := func(root, to string) channel.Message {
		m := channel.Message{SessionID: "dev", From: "alice", To: to, Content: channel.Content{Text: "work"}}
		if err := (&channel.Writer{Root: tree.Root(root)}).Post(&m); err != nil {
			t.Fatal(err)
		}
		var reply channel.Message
		waitFor(t, func() bool {
			msgs, _, _ := channel.ReadAll(tree.Root(root), "dev", channel.ReaderOptions{})
			for _, r := range msgs {
				if r.Metadata.InReplyTo == m.ID {
					reply = r
					return true
				}
			}
			return false
		})
		return reply
	}

	root := newTree(t)
	startWatch(t, os.Args[0], root, "claudia", nil, "--channel", "dev", "--cli", "claude", "--cmd", claudeBin, "--max-turns", "3")
	ask(root, "claudia")
	args, err := os.ReadFile(argsFile)
	if err != nil || !strings.Contains(string(args), "\n--max-turns\n3\n") {
		t.Errorf("claude's arguments %q (%v), want --max-turns 3", args, err)
	}

	startWatch(t, os.Args[0], root, "coder", nil, "--channel", "dev", "--cli", "codex", "--cmd", codexBin, "--max-turns", "2", "--post-errors")
	if r := ask(root, "coder"); !strings.Contains(r.Content.Text, "turn limit reached") {
		t.Errorf("codex's reply %q, want the turn limit's error", r.Content.Text)
	}
}
