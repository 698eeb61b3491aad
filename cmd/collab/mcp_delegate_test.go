package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/testsupport/gittest"
	"github.com/collabdev/collab/internal/transport/mcpserver"
)

// TestMCPDelegate: `collab mcp`, run in a subfolder of a git repository,
// delegates through delegate_to_worktree to the stand-in CLI (which
// commits in its worktree); get_session_status then shows the commit and
// the answer, list_sessions the session, and a follow-up through
// send_message_to_session is answered with a second commit.
func TestMCPDelegate(t *testing.T) {
	d := newDelegateEnv(t)
	t.Setenv("FAKE_CLI_COMMIT", "1")
	sub := filepath.Join(d.repo, "src")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub) // the server's working directory gives the repository
	env := map[string]string{"COLLAB_ROOT": d.root, "COLLAB_WORKTREES": d.wts,
		"COLLAB_DELEGATE_CLI": "command", "COLLAB_DELEGATE_CMD": os.Args[0]}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // hang guard
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"mcp", "--agent", "lead", "--channel", "dev"}, func(k string) string { return env[k] }, inR, outW, &stderr)
		outW.Close()
	}()
	defer func() {
		inW.Close()
		if err := <-done; err != nil {
			t.Errorf("collab mcp: %v (stderr %q)", err, stderr.String())
		}
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any, out any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %+v, %v (stderr %q)", name, res, err, stderr.String())
		}
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: %s: %v", name, data, err)
		}
	}

	var s mcpserver.DelegateResult
	call("delegate_to_worktree", map[string]any{"prompt": "please fix the bug", "title": "Fix the bug"}, &s)
	wantPath := filepath.Join(d.wts, "repo", "fix-the-bug")
	if s.WorkerID != "lead-"+s.SessionID || s.Branch != "fix-the-bug" || s.WorktreePath != wantPath || s.BaseBranch != "main" {
		t.Fatalf("delegate_to_worktree = %+v", s)
	}
	if gittest.Git(t, d.repo, "branch", "--list", "fix-the-bug") == "" {
		t.Fatal("no branch fix-the-bug")
	}
	// status waits for n commits ahead and the agent's answer.
	status := func(n int) mcpserver.SessionStatusResult {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var st mcpserver.SessionStatusResult
			call("get_session_status", map[string]any{"sessionId": s.SessionID}, &st)
			if st.CommitsAhead == n && st.LastMessage != nil && st.LastMessage.From == s.WorkerID {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("get_session_status = %+v; want %d commits ahead and the answer", st, n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	st := status(1)
	if st.Status != "running" || len(st.Dirty) != 0 || len(st.Jobs) != 1 || st.Channel != "delegate-"+s.SessionID {
		t.Errorf("status %+v", st)
	}
	var list mcpserver.ListSessionsResult
	call("list_sessions", nil, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID != s.SessionID || list.Sessions[0].WorktreePath != wantPath {
		t.Errorf("list_sessions = %+v", list)
	}
	var sent mcpserver.SendToSessionResult
	call("send_message_to_session", map[string]any{"sessionId": s.SessionID, "message": "and the other one"}, &sent)
	if st := status(2); st.LastMessage.InReplyTo != sent.ID {
		t.Errorf("after the follow-up: %+v, want the answer to %s", st, sent.ID)
	}
}

// TestMCPDelegateDepth: the MCP delegator applies collab delegate's depth
// limit from the server's environment (a delegated agent's
// COLLAB_DELEGATION_DEPTH, passed on by its watcher's CLI).
func TestMCPDelegateDepth(t *testing.T) {
	d := newDelegateEnv(t)
	env := map[string]string{"COLLAB_ROOT": d.root, "COLLAB_WORKTREES": d.wts, "COLLAB_DELEGATION_DEPTH": "2"}
	def := service.DelegateDefaultsFrom(func(k string) string { return env[k] })
	def.Cmd = os.Args[0]
	svc := service.WithDelegateDefaults(mount(tree.Root(d.root), io.Discard), def)
	_, err := svc.Delegate(context.Background(), service.Actor{Name: "lead-1234", Hops: -1}, service.DelegateRequest{Repo: d.repo, Prompt: "x", CLI: "command"})
	if err == nil || !strings.Contains(err.Error(), "delegation refused: lead-1234 is at delegation depth 2") {
		t.Fatalf("delegate at depth 2: %v, want refused", err)
	}
	if gittest.Git(t, d.repo, "branch", "--list") != "* main" {
		t.Errorf("branches after a refusal: %q", gittest.Git(t, d.repo, "branch", "--list"))
	}
}
