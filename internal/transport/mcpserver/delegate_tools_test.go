package mcpserver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/internal/workspace/worktree"
)

// fakeDelegations is the service of the tests: the mount's, but Delegate
// records the requests and makes a session record for each, as the real
// one does, without git or a watcher; SessionStatus finds the session as
// the mount does (its refusals) and tells st of it.
type fakeDelegations struct {
	service.Service
	root tree.Root
	reqs []delegateCall
	st   service.SessionStatus
}

// delegateCall is one Delegate asked of fakeDelegations.
type delegateCall struct {
	By                                     string // the actor
	Repo, Prompt, Base, Branch, CLI, Title string
}

func newFakeDelegations(root tree.Root) *fakeDelegations {
	return &fakeDelegations{Service: service.NewMount(service.Config{Root: root, Host: "vm-1"}), root: root}
}

func (f *fakeDelegations) Delegate(ctx context.Context, a service.Actor, req service.DelegateRequest) (*service.Delegated, error) {
	check := req
	check.Cmd = "stand-in" // as a server given its --delegate-cmd
	if err := check.Check(); err != nil {
		return nil, err
	}
	f.reqs = append(f.reqs, delegateCall{By: a.Name, Repo: req.Repo, Prompt: req.Prompt, Base: req.Base, Branch: req.Branch, CLI: req.CLI, Title: req.Title})
	id := sessions.NewID()
	s := &sessions.Session{ID: id, Agent: sessions.AgentID(a.Name, id), DelegatedBy: a.Name, Depth: 1, Repo: req.Repo,
		Worktree: filepath.Join(req.Repo, "..", "wt", req.Branch), Branch: req.Branch, Base: "main",
		Channel: sessions.Channel(id), CLI: req.CLI, Title: req.Title, Created: time.Now().UTC(), Status: sessions.Running}
	return &service.Delegated{Session: s}, sessions.Create(f.root, s)
}

func (f *fakeDelegations) SessionStatus(ctx context.Context, ref service.SessionRef) (*service.SessionStatus, error) {
	s, err := f.Service.FindSession(ctx, ref)
	if err != nil {
		return nil, err
	}
	st := f.st
	st.Session = s
	return &st, nil
}

// delegateRepo makes a git repository with a subfolder and returns both.
func delegateRepo(t *testing.T) (repo, sub string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo = filepath.Join(t.TempDir(), "proj")
	if out, err := exec.Command("git", "init", "--quiet", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	sub = filepath.Join(repo, "src")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.EvalSymlinks(repo)
	if err != nil {
		t.Fatal(err)
	}
	return repo, sub
}

// TestDelegateTools: delegate_to_worktree asks the Delegator as the
// server's agent, for the repository of its working directory (a
// subfolder gives the top); list_sessions, get_session_status and
// send_message_to_session see only the agent's own sessions, and the
// follow-up lands on the session's channel, addressed to its agent.
func TestDelegateTools(t *testing.T) {
	root := tree.Root(t.TempDir())
	repo, sub := delegateRepo(t)
	fd := newFakeDelegations(root)
	_, cs := connectWith(t, Config{Root: root, Agent: "claude--i1", Channel: "dev", Host: "vm-1", Hops: 2,
		Poll: 10 * time.Millisecond, Service: fd, Workdir: sub})

	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"no prompt", map[string]any{"prompt": " "}, "prompt is empty"},
		{"bad cli", map[string]any{"prompt": "x", "agentId": "vim"}, "not one of"},
		{"a repository argument", map[string]any{"prompt": "x", "repo": "/etc"}, "unexpected additional properties"},
		{"a full ref as branch", map[string]any{"prompt": "x", "branch": "refs/heads/x"}, "give the short name (x)"},
		{"@ as branch", map[string]any{"prompt": "x", "branch": "@"}, "not a valid branch name"},
		{"an option as branch", map[string]any{"prompt": "x", "branch": "--force"}, "not a valid branch name"},
	} {
		if got := call(t, cs, "delegate_to_worktree", c.args, nil); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want an error with %q", c.name, got, c.want)
		}
	}
	var res DelegateResult
	if e := call(t, cs, "delegate_to_worktree", map[string]any{"prompt": "write the lexer", "branch": "lexer",
		"baseBranch": "main", "agentId": "command", "title": "Lexer"}, &res); e != "" {
		t.Fatal(e)
	}
	if len(fd.reqs) != 1 {
		t.Fatalf("requests %+v, want one", fd.reqs)
	}
	want := delegateCall{Repo: repo, By: "claude--i1", Prompt: "write the lexer", Base: "main", Branch: "lexer", CLI: "command", Title: "Lexer"}
	if fd.reqs[0] != want {
		t.Errorf("request %+v, want %+v", fd.reqs[0], want)
	}
	if res.SessionID == "" || res.WorkerID != "claude-"+res.SessionID || res.Branch != "lexer" || res.Channel != "delegate-"+res.SessionID {
		t.Errorf("result %+v", res)
	}

	// Another agent's session, in the same tree.
	other := &sessions.Session{ID: "beef", Agent: "codex-beef", DelegatedBy: "codex", Channel: "delegate-beef", Status: sessions.Running, Created: time.Now()}
	if err := sessions.Create(root, other); err != nil {
		t.Fatal(err)
	}
	var list ListSessionsResult
	if e := call(t, cs, "list_sessions", nil, &list); e != "" {
		t.Fatal(e)
	}
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID != res.SessionID || list.Sessions[0].State != "OFFLINE" || list.Sessions[0].Status != "running" {
		t.Errorf("list_sessions = %+v, want only the agent's session", list)
	}

	var sent SendToSessionResult
	if e := call(t, cs, "send_message_to_session", map[string]any{"sessionId": res.SessionID, "message": "also the parser"}, &sent); e != "" || !sent.Success {
		t.Fatalf("send: %q %+v", e, sent)
	}
	msgs, _, err := channel.Tail(root, res.Channel, "", 5)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("session channel: %v, %v; want the follow-up", msgs, err)
	}
	if m := msgs[0]; m.ID != sent.ID || m.From != "claude--i1" || m.To != res.WorkerID || m.Content.Text != "also the parser" || m.Metadata.Hops != 3 {
		t.Errorf("follow-up %+v", m)
	}

	fd.st = service.SessionStatus{State: "AWAKE/WORKING", Jobs: []jobs.Job{{ID: "j1", Status: "running", Message: sent.ID}},
		Last: &msgs[0], Git: &worktree.State{Branch: "lexer", Ahead: 2, Dirty: []string{"?? x.go"}}}
	var st SessionStatusResult
	if e := call(t, cs, "get_session_status", map[string]any{"sessionId": res.WorkerID}, &st); e != "" {
		t.Fatal(e)
	}
	if st.SessionID != res.SessionID || st.State != "AWAKE/WORKING" || st.CommitsAhead != 2 || len(st.Dirty) != 1 ||
		len(st.Jobs) != 1 || st.LastMessage == nil || st.LastMessage.ID != sent.ID || st.LastMessage.Verdict != "unsigned" {
		t.Errorf("get_session_status = %+v", st)
	}

	for _, tool := range []string{"get_session_status", "send_message_to_session"} {
		for _, id := range []string{"beef", "codex-beef", "dead"} {
			args := map[string]any{"sessionId": id}
			if tool == "send_message_to_session" {
				args["message"] = "x"
			}
			if got := call(t, cs, tool, args, nil); !strings.Contains(got, "no session "+id+" delegated by claude--i1") {
				t.Errorf("%s(%s): %q, want refused", tool, id, got)
			}
		}
	}
	if msgs, _, _ := channel.Tail(root, "delegate-beef", "", 5); len(msgs) != 0 {
		t.Errorf("a follow-up reached another agent's session: %v", msgs)
	}
}

// TestDelegateOutsideRepo: a server whose working directory is in no git
// repository, or that goes through a bridge, refuses to delegate.
func TestDelegateOutsideRepo(t *testing.T) {
	root := tree.Root(t.TempDir())
	_, cs := connectWith(t, Config{Root: root, Agent: "claude", Channel: "dev", Service: newFakeDelegations(root), Workdir: t.TempDir()})
	if got := call(t, cs, "delegate_to_worktree", map[string]any{"prompt": "x"}, nil); !strings.Contains(got, "not in a git repository") {
		t.Errorf("outside a repository: %q", got)
	}
	// Through a bridge: no worktrees, no watchers here.
	viaBridge = true
	t.Cleanup(func() { viaBridge = false })
	_, cs = connectWith(t, Config{Root: root, Agent: "claude", Channel: "dev", Workdir: t.TempDir()})
	for _, tool := range []string{"delegate_to_worktree", "get_session_status", "send_message_to_session", "list_sessions"} {
		args := map[string]any{"sessionId": "ab12", "message": "x"}
		switch tool {
		case "delegate_to_worktree":
			args = map[string]any{"prompt": "x"}
		case "get_session_status":
			args = map[string]any{"sessionId": "ab12"}
		case "list_sessions":
			args = nil
		}
		if got := call(t, cs, tool, args, nil); !strings.Contains(got, "not available") {
			t.Errorf("%s through a bridge: %q", tool, got)
		}
	}
}
