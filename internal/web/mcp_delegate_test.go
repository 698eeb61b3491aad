package web

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/testsupport/gittest"
	"github.com/collabdev/collab/internal/transport/mcpserver"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// collabAndStandin builds collab and the demo's stand-in model CLI and
// returns their paths.
func collabAndStandin(t *testing.T) (collab, standin string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go to build collab")
	}
	dir := t.TempDir()
	for _, pkg := range []string{"cmd/collab", "demo/standin"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, filepath.Base(pkg)), "github.com/collabdev/collab/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return filepath.Join(dir, "collab"), filepath.Join(dir, "standin")
}

// TestMCPDelegateOnAMountedHost: collab serve's /mcp, on a host with the
// mount, delegates: delegate_to_worktree (the repository of the server's
// working directory) makes the branch and worktree and starts the agent's
// watcher (collab watch, the stand-in CLI) detached, the prompt posted as
// the token's agent; get_session_status then shows the agent's answer,
// list_sessions the session. Until the service layer, /mcp answered
// "delegation is not available in this server".
func TestMCPDelegateOnAMountedHost(t *testing.T) {
	collab, standin := collabAndStandin(t)
	repo := gittest.Repo(t)
	root := tree.Root(filepath.Join(t.TempDir(), "tree"))
	if out, err := exec.Command(collab, "init", "--root", string(root)).CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	wts := filepath.Join(t.TempDir(), "wts")
	svc := service.WithDelegateDefaults(service.NewMount(service.Config{Root: root, Program: collab}),
		service.DelegateRequest{Cmd: standin, Worktrees: wts, KeyDir: t.TempDir(), Poll: 100 * time.Millisecond, Heartbeat: time.Second})
	m := newMCPTestServer(t, Config{Root: root, Service: svc})
	t.Cleanup(func() { // no delegated watcher outlives the test
		list, _ := sessions.List(root)
		for _, s := range list {
			if sessions.Alive(&s) {
				proc.EndGroup(s.PID, 0)
			}
		}
	})
	t.Chdir(repo) // the server's working directory gives the repository
	secret, _ := m.agentToken(t, "claude", "dev")
	cs, err := mcpConnect(t, m.ts.URL+"/mcp", secret)
	if err != nil {
		t.Fatal(err)
	}

	var d mcpserver.DelegateResult
	if e := mcpCall(t, cs, "delegate_to_worktree", map[string]any{"prompt": "please look at the README", "agentId": "command",
		"title": "Readme"}, &d); e != "" {
		t.Fatalf("delegate_to_worktree: %s", e)
	}
	wantPath := filepath.Join(wts, "repo", "readme")
	if d.WorkerID != "claude-"+d.SessionID || d.Branch != "readme" || d.WorktreePath != wantPath || d.BaseBranch != "main" {
		t.Fatalf("delegate_to_worktree = %+v", d)
	}
	if gittest.Git(t, repo, "branch", "--list", "readme") == "" {
		t.Fatal("no branch readme")
	}
	deadline := time.Now().Add(time.Minute)
	var st mcpserver.SessionStatusResult
	for {
		if e := mcpCall(t, cs, "get_session_status", map[string]any{"sessionId": d.SessionID}, &st); e != "" {
			t.Fatalf("get_session_status: %s", e)
		}
		if st.LastMessage != nil && st.LastMessage.From == d.WorkerID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("get_session_status = %+v; want the agent's answer", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st.Status != sessions.Running || st.WorktreePath != wantPath || st.Channel != "delegate-"+d.SessionID || len(st.Dirty) != 0 {
		t.Errorf("get_session_status = %+v", st)
	}
	var list mcpserver.ListSessionsResult
	if e := mcpCall(t, cs, "list_sessions", nil, &list); e != "" || len(list.Sessions) != 1 || list.Sessions[0].SessionID != d.SessionID {
		t.Errorf("list_sessions = %+v, %s", list, e)
	}
	// Another agent's token does not reach the session.
	other, _ := m.agentToken(t, "codex", "dev")
	cs2, err := mcpConnect(t, m.ts.URL+"/mcp", other)
	if err != nil {
		t.Fatal(err)
	}
	if e := mcpCall(t, cs2, "get_session_status", map[string]any{"sessionId": d.SessionID}, nil); !strings.Contains(e, "no session "+d.SessionID+" delegated by codex") {
		t.Errorf("get_session_status as codex: %q", e)
	}
}
