package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/gittest"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/internal/workspace/worktree"
)

// delegationsEnv is a tree, a repository and a Mount on the host "here"
// whose watcher program does not exist: what these tests delegate is
// refused before any watcher starts.
type delegationsEnv struct {
	m      *Mount
	root   tree.Root
	repo   string
	keyDir string
}

func newDelegationsEnv(t *testing.T) *delegationsEnv {
	t.Helper()
	root := tree.Root(t.TempDir())
	return &delegationsEnv{m: NewMount(Config{Root: root, Host: "here", Program: "/nonexistent/collab"}),
		root: root, repo: gittest.Repo(t), keyDir: t.TempDir()}
}

// request is a delegation of the command CLI in e's repository.
func (e *delegationsEnv) request(prompt string) DelegateRequest {
	return DelegateRequest{Repo: e.repo, Prompt: prompt, CLI: "command", Cmd: "/bin/true",
		Worktrees: filepath.Join(filepath.Dir(e.repo), "wts"), KeyDir: e.keyDir, StartTimeout: time.Second}
}

// record makes a session record of this account, as Delegate would.
func (e *delegationsEnv) record(t *testing.T, id, by, host, status string) *sessions.Session {
	t.Helper()
	s := &sessions.Session{ID: id, Agent: sessions.AgentID(by, id), DelegatedBy: by, Depth: 1, Repo: e.repo,
		Worktree: filepath.Join(t.TempDir(), "wt-"+id), Branch: "b-" + id, Base: "main", Channel: sessions.Channel(id),
		CLI: "command", Host: host, Created: time.Now().UTC(), Status: status}
	if err := sessions.Create(e.root, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// nothingMade fails t if a refused delegation left a branch, a worktree,
// a key or a record (beyond want records).
func (e *delegationsEnv) nothingMade(t *testing.T, want int) {
	t.Helper()
	if got := gittest.Git(t, e.repo, "branch", "--list"); got != "* main" {
		t.Errorf("branches after a refusal: %q", got)
	}
	if ents, _ := os.ReadDir(e.keyDir); len(ents) != 0 {
		t.Errorf("keys after a refusal: %v", ents)
	}
	if list, _ := sessions.List(e.root); len(list) != want {
		t.Errorf("records after a refusal: %+v, want %d", list, want)
	}
}

func kindIs(t *testing.T, what string, err error, k errkind.Kind, text string) {
	t.Helper()
	if err == nil || errkind.Of(err) != k || !strings.Contains(err.Error(), text) {
		t.Errorf("%s: %v (kind %v), want %v with %q", what, err, errkind.Of(err), k, text)
	}
}

// TestDelegateLimits: a delegator at the depth limit (told, or recorded
// for its own session when the door does not know it: /mcp), or with the
// concurrent sessions limit reached, is refused (Conflict) and nothing is
// made; a negative limit is none.
func TestDelegateLimits(t *testing.T) {
	e := newDelegationsEnv(t)
	ctx := context.Background()
	lead := Actor{Name: "lead", Hops: -1}

	req := e.request("work")
	req.Depth = 2
	_, err := e.m.Delegate(ctx, lead, req)
	kindIs(t, "told depth 2", err, errkind.Conflict, "lead is at delegation depth 2, the limit is 2")
	e.nothingMade(t, 0)

	deep := e.record(t, "dee9", "lead", "here", sessions.Stopped)
	deep.Depth = 2
	if err := sessions.Update(e.root, deep); err != nil {
		t.Fatal(err)
	}
	_, err = e.m.Delegate(ctx, Actor{Name: deep.Agent, Hops: -1}, e.request("work"))
	kindIs(t, "recorded depth 2", err, errkind.Conflict, deep.Agent+" is at delegation depth 2, the limit is 2")

	e.record(t, "ac71", "lead", "here", sessions.Running)
	req = e.request("more work")
	req.MaxConcurrent = 1
	_, err = e.m.Delegate(ctx, lead, req)
	kindIs(t, "one active, limit 1", err, errkind.Conflict, "already has 1 active delegated sessions, the limit is 1")
	e.nothingMade(t, 2)

	// No limit: the refusal is the watcher's, not the limit's.
	req.MaxConcurrent, req.MaxDepth, req.Depth = -1, -1, 5
	_, err = e.m.Delegate(ctx, lead, req)
	if err == nil || errkind.Is(err, errkind.Conflict) {
		t.Errorf("without limits: %v, want the watcher's failure", err)
	}
	e.nothingMade(t, 2)
}

// TestDelegateConcurrencyRace: a rival delegation records itself between
// the check and the record: the count after the record refuses
// (Conflict), and takes everything back.
func TestDelegateConcurrencyRace(t *testing.T) {
	e := newDelegationsEnv(t)
	e.record(t, "ac71", "human", "here", sessions.Running)
	afterCreate = func(m *Mount) {
		rival := &sessions.Session{ID: "ffff", DelegatedBy: "human", Status: sessions.Starting}
		if err := sessions.Create(m.cfg.Root, rival); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterCreate = nil }()
	req := e.request("raced work")
	req.MaxConcurrent = 2
	_, err := e.m.Delegate(context.Background(), Actor{Name: "human", Hops: -1}, req)
	kindIs(t, "raced", err, errkind.Conflict, "already has 2 active delegated sessions, the limit is 2")
	e.nothingMade(t, 2) // the first and the rival
}

// TestDelegateInvalid: a request that can never work is Invalid, and
// nothing is made.
func TestDelegateInvalid(t *testing.T) {
	e := newDelegationsEnv(t)
	gittest.Git(t, e.repo, "branch", "taken")
	for _, c := range []struct {
		name string
		edit func(*DelegateRequest)
		want string
	}{
		{"no prompt", func(r *DelegateRequest) { r.Prompt = " " }, "prompt is empty"},
		{"bad cli", func(r *DelegateRequest) { r.CLI = "vim" }, "not one of"},
		{"command without cmd", func(r *DelegateRequest) { r.Cmd = "" }, "needs a command line"},
		{"a full ref as branch", func(r *DelegateRequest) { r.Branch = "refs/heads/x" }, "give the short name (x)"},
		{"an option as branch", func(r *DelegateRequest) { r.Branch = "--force" }, "not a valid branch name"},
		{"not a repository", func(r *DelegateRequest) { r.Repo = t.TempDir() }, "repository"},
		{"no such base", func(r *DelegateRequest) { r.Base = "nowhere" }, "nowhere"},
		{"an existing branch", func(r *DelegateRequest) { r.Branch = "taken" }, "taken exists"},
	} {
		req := e.request("work")
		c.edit(&req)
		_, err := e.m.Delegate(context.Background(), Actor{Name: "lead", Hops: -1}, req)
		kindIs(t, c.name, err, errkind.Invalid, c.want)
	}
	if got := gittest.Git(t, e.repo, "branch", "--list"); got != "* main\n  taken" {
		t.Errorf("branches: %q", got)
	}
	if list, _ := sessions.List(e.root); len(list) != 0 {
		t.Errorf("records: %+v", list)
	}
}

// TestStopRefusals: stop and rm refuse, each with its one kind, a session
// removed or on another host (Conflict), another account's record
// (Forbidden), none (NotFound), another agent's when an agent asks
// (NotFound), a malformed id where only ids are taken (Invalid); rm
// refuses a dirty worktree (Conflict) before stopping anything.
func TestStopRefusals(t *testing.T) {
	e := newDelegationsEnv(t)
	ctx := context.Background()
	e.record(t, "aaaa", "lead", "here", sessions.Removed)
	e.record(t, "bbbb", "lead", "elsewhere", sessions.Running)
	foreign := e.record(t, "cccc", "lead", "here", sessions.Running) // another account's, below
	e.record(t, "dddd", "lead", "here", sessions.Running)
	cases := []struct {
		name string
		ref  SessionRef
		kind errkind.Kind
		want string
	}{
		{"removed", SessionRef{ID: "aaaa"}, errkind.Conflict, "was removed"},
		{"another host", SessionRef{ID: "bbbb"}, errkind.Conflict, "runs on host elsewhere"},
		{"another account's", SessionRef{ID: "cccc"}, errkind.Forbidden, "not this account's"},
		{"none", SessionRef{ID: "0000"}, errkind.NotFound, "no session 0000"},
		{"another agent's", SessionRef{ID: "dddd", By: "codex"}, errkind.NotFound, "no session dddd delegated by codex"},
		{"not an id", SessionRef{ID: "AB12", IDOnly: true}, errkind.Invalid, "not a session id"},
		{"no id", SessionRef{}, errkind.Invalid, "required"},
	}
	defer func() { getuid = os.Getuid }()
	for _, c := range cases {
		getuid = os.Getuid
		if c.name == "another account's" {
			getuid = func() int { return os.Getuid() + 1 } // this account taken for another
		}
		_, err := e.m.StopSession(ctx, StopSessionRequest{Session: c.ref})
		kindIs(t, "stop: "+c.name, err, c.kind, c.want)
		_, err = e.m.RemoveSession(ctx, RemoveSessionRequest{Session: c.ref, Force: true})
		kindIs(t, "rm: "+c.name, err, c.kind, c.want)
	}
	getuid = os.Getuid
	if s, err := sessions.Read(e.root, foreign.ID); err != nil || s.Status != sessions.Running {
		t.Errorf("a refused stop changed the record: %+v, %v", s, err)
	}

	// A dirty worktree: rm refuses it, stop does not.
	wt := filepath.Join(t.TempDir(), "wt")
	if err := worktree.Add(ctx, e.repo, "main", "dirty", wt); err != nil {
		t.Fatal(err)
	}
	s := e.record(t, "eeee", "lead", "here", sessions.Running)
	s.Worktree = wt
	if err := sessions.Update(e.root, s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, "scratch.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := e.m.RemoveSession(ctx, RemoveSessionRequest{Session: SessionRef{ID: "eeee"}})
	kindIs(t, "rm of a dirty worktree", err, errkind.Conflict, "scratch.txt")
	if got, _ := sessions.Read(e.root, "eeee"); got.Status != sessions.Running {
		t.Errorf("a refused rm stopped the session: %+v", got)
	}
	if got, err := e.m.StopSession(ctx, StopSessionRequest{Session: SessionRef{ID: "eeee"}}); err != nil || got.Status != sessions.Stopped {
		t.Errorf("stop: %+v, %v", got, err)
	}
	rm, err := e.m.RemoveSession(ctx, RemoveSessionRequest{Session: SessionRef{ID: s.Agent}, Force: true})
	if err != nil || rm.Session.Status != sessions.Removed {
		t.Fatalf("rm --force by agent id: %+v, %v", rm, err)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("worktree left: %v", err)
	}
}

// TestSessionsWhoSeesWhat: a person sees every session (removed ones with
// All); an agent only those it delegated, by NAME or NAME@INSTANCE.
func TestSessionsWhoSeesWhat(t *testing.T) {
	e := newDelegationsEnv(t)
	ctx := context.Background()
	e.record(t, "aaaa", "lead--i1", "here", sessions.Running)
	e.record(t, "bbbb", "codex", "here", sessions.Running)
	e.record(t, "cccc", "lead--i1", "here", sessions.Removed)
	for _, c := range []struct {
		q    SessionsQuery
		want string
	}{
		{SessionsQuery{}, "aaaa bbbb"},
		{SessionsQuery{All: true}, "aaaa bbbb cccc"},
		{SessionsQuery{By: "lead@i1", All: true}, "aaaa cccc"},
		{SessionsQuery{By: "lead--i1"}, "aaaa"},
		{SessionsQuery{By: "nobody"}, ""},
	} {
		list, err := e.m.Sessions(ctx, c.q)
		var ids []string
		for _, s := range list {
			ids = append(ids, s.ID)
			if s.State == "" {
				t.Errorf("%+v: no state", c.q)
			}
		}
		if got := strings.Join(ids, " "); err != nil || got != c.want {
			t.Errorf("Sessions(%+v) = %q, %v; want %q", c.q, got, err, c.want)
		}
	}
	if _, err := e.m.Sessions(ctx, SessionsQuery{By: "@i1"}); !errkind.Is(err, errkind.Invalid) {
		t.Errorf("By @i1: %v, want Invalid", err)
	}
	m, err := e.m.SendToSession(ctx, Actor{Name: "lead@i1", Hops: 2, Mode: "mcp"}, SendToSessionRequest{Session: SessionRef{ID: "aaaa", By: "lead@i1"}, Text: "more"})
	if err != nil || m.From != "lead--i1" || m.To != "lead-aaaa" || m.SessionID != "delegate-aaaa" || m.Metadata.Hops != 3 {
		t.Errorf("SendToSession = %+v, %v", m, err)
	}
	_, err = e.m.SendToSession(ctx, Actor{Name: "codex", Hops: -1}, SendToSessionRequest{Session: SessionRef{ID: "aaaa", By: "codex"}, Text: "x"})
	kindIs(t, "send to another's session", err, errkind.NotFound, "no session aaaa delegated by codex")
}
