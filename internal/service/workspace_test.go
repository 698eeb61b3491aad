package service

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/documents"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

func testMount(t *testing.T) (*Mount, tree.Root) {
	t.Helper()
	root := tree.Root(t.TempDir())
	return NewMount(Config{Root: root, Host: "here"}), root
}

func postTo(t *testing.T, root tree.Root, ch, from, to, text string) string {
	t.Helper()
	m := &channel.Message{SessionID: ch, From: from, To: to, Content: channel.Content{Text: text}}
	if err := (&channel.Writer{Root: root}).Post(m); err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// TestInboxAgentNames: an inbox is named NAME or NAME@INSTANCE, one rule
// (workflow.ParseAddress); every other name is Invalid.
func TestInboxAgentNames(t *testing.T) {
	m, root := testMount(t)
	id := postTo(t, root, "dev", "human", "coder--i1", "fix it")
	postTo(t, root, "dev", "human", "coder", "for plain coder")
	tests := []struct {
		agent   string
		wantID  string
		want    int
		invalid bool
	}{
		{agent: "coder@i1", wantID: "coder--i1", want: 1},
		{agent: "coder--i1", wantID: "coder--i1", want: 1},
		{agent: "coder", wantID: "coder", want: 1},
		{agent: "@i1", invalid: true},
		{agent: "coder@", invalid: true},
		{agent: "../x", invalid: true},
		{agent: "", invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			res, err := m.Inbox(context.Background(), InboxRequest{Agent: tt.agent, Peek: true})
			if tt.invalid {
				if !errkind.Is(err, errkind.Invalid) {
					t.Fatalf("Inbox(%q) = %v, want Invalid", tt.agent, err)
				}
				return
			}
			if err != nil || res.Agent != tt.wantID || len(res.Items) != tt.want {
				t.Fatalf("Inbox(%q) = %s, %d items, %v; want %s, %d", tt.agent, res.Agent, len(res.Items), err, tt.wantID, tt.want)
			}
		})
	}
	if _, err := m.Inbox(context.Background(), InboxRequest{Agent: "coder", Channels: []string{"a b"}}); !errkind.Is(err, errkind.Invalid) {
		t.Errorf("a bad channel: %v, want Invalid", err)
	}
	ack := []struct {
		until string
		kind  errkind.Kind
	}{
		{"", errkind.Invalid},
		{"yesterday", errkind.Invalid},
		{"msg-20260111-163300-x-0000", errkind.NotFound},
	}
	for _, tt := range ack {
		if _, err := m.AckInbox(context.Background(), AckRequest{Agent: "coder@i1", Until: tt.until}); !errkind.Is(err, tt.kind) {
			t.Errorf("AckInbox(until %q) = %v, want %s", tt.until, err, tt.kind)
		}
	}
	if a, err := m.AckInbox(context.Background(), AckRequest{Agent: "coder@i1", Until: id}); err != nil || a.N != 1 || a.Agent != "coder--i1" {
		t.Errorf("AckInbox = %+v, %v; want 1 of coder--i1", a, err)
	}
}

// TestDocRules: the rules of a doc request, once for every door.
func TestDocRules(t *testing.T) {
	tests := []struct {
		name string
		req  DocRequest
		file string // "" : Invalid
	}{
		{"read the entry point", DocRequest{Action: "read", Channel: "dev"}, documents.EntryPoint},
		{"write a file", DocRequest{Action: "write", Channel: "dev", File: "a/b.md", Content: "x", IfVersion: "v"}, "a/b.md"},
		{"unknown action", DocRequest{Action: "edit", Channel: "dev"}, ""},
		{"bad channel", DocRequest{Action: "read", Channel: "../dev"}, ""},
		{"if_version on append", DocRequest{Action: "append", Channel: "dev", IfVersion: "v"}, ""},
		{"content on read", DocRequest{Action: "read", Channel: "dev", Content: "x"}, ""},
		{"create unnamed", DocRequest{Action: "create", Channel: "dev", Content: "x"}, ""},
		{"delete unnamed", DocRequest{Action: "delete", Channel: "dev"}, ""},
		{"list a file", DocRequest{Action: "list", Channel: "dev", File: "a.md"}, ""},
		{"climb", DocRequest{Action: "read", Channel: "dev", File: "../../etc/passwd"}, ""},
		{"absolute", DocRequest{Action: "read", Channel: "dev", File: "/etc/passwd"}, ""},
		{"dot-file", DocRequest{Action: "read", Channel: "dev", File: ".notes.md.lock"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, err := tt.req.Check()
			switch {
			case tt.file == "" && !errkind.Is(err, errkind.Invalid):
				t.Errorf("Check = %q, %v; want Invalid", file, err)
			case tt.file != "" && (err != nil || file != tt.file):
				t.Errorf("Check = %q, %v; want %q", file, err, tt.file)
			}
		})
	}
}

// TestDocKinds: a missing document is NotFound, a stale version or an
// existing file Conflict (with the version now).
func TestDocKinds(t *testing.T) {
	m, _ := testMount(t)
	ctx := context.Background()
	do := func(req DocRequest) (DocResult, error) {
		req.Channel = "dev"
		return m.Doc(ctx, Actor{Name: "codex"}, req)
	}
	if _, err := do(DocRequest{Action: "read"}); !errkind.Is(err, errkind.NotFound) {
		t.Errorf("read of a missing file: %v, want NotFound", err)
	}
	r, err := do(DocRequest{Action: "create", File: "plan.md", Content: "one\n"})
	if err != nil || r.Version != documents.Version("one\n") {
		t.Fatalf("create: %+v %v", r, err)
	}
	r, err = do(DocRequest{Action: "create", File: "plan.md", Content: "two\n"})
	if !errkind.Is(err, errkind.Conflict) || r.Version != documents.Version("one\n") {
		t.Errorf("create over a file: %+v %v; want Conflict and the version now", r, err)
	}
	r, err = do(DocRequest{Action: "write", File: "plan.md", Content: "two\n", IfVersion: "stale"})
	if !errkind.Is(err, errkind.Conflict) || r.Version != documents.Version("one\n") {
		t.Errorf("stale write: %+v %v; want Conflict and the version now", r, err)
	}
	if r, err := do(DocRequest{Action: "list"}); err != nil || len(r.Entries) != 1 {
		t.Errorf("list: %+v %v", r, err)
	}
}

// TestKillJob: who may kill a job (jobs.MayKill, its one owner for every
// door) and the kinds of the refusals.
func TestKillJob(t *testing.T) {
	m, root := testMount(t)
	ctx := context.Background()
	start := func(agent string) jobs.Job {
		t.Helper()
		j := jobs.Job{ID: jobs.NewID(), Agent: agent, Host: "elsewhere", Channel: "dev",
			Message: "msg-20260310-120000-alice-0001", From: "alice", CLI: "fake", Started: time.Now()}
		r, err := jobs.Start(root, j, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r.Job()
	}
	codex, inst := start("codex"), start("coder--i1")
	done := start("codex")
	if err := jobs.SetStatus(root, "codex", done.ID, jobs.Completed); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		by   string
		req  KillRequest
		kind errkind.Kind // Failed: allowed
	}{
		{"a stranger", "mallory", KillRequest{Job: codex.ID}, errkind.Forbidden},
		{"no one", "", KillRequest{Job: codex.ID}, errkind.Forbidden},
		{"a finished job", "alice", KillRequest{Job: done.ID}, errkind.Conflict},
		{"no such job", "alice", KillRequest{Job: "job-msg-20260310-120000-alice-ffff"}, errkind.NotFound},
		{"a bad id", "alice", KillRequest{Job: "../x"}, errkind.Invalid},
		{"a bad agent", "alice", KillRequest{Job: codex.ID, Of: "co der"}, errkind.Invalid},
		{"narrowed to another agent", "alice", KillRequest{Job: codex.ID, Of: "claude"}, errkind.NotFound},
		{"its agent, by address", "coder@i1", KillRequest{Job: inst.ID, Of: "coder@i1"}, errkind.Failed},
		{"who asked", "alice", KillRequest{Job: codex.ID}, errkind.Failed},
		{"another request pending", "codex", KillRequest{Job: codex.ID}, errkind.Conflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := m.KillJob(ctx, Actor{Name: tt.by}, tt.req)
			if tt.kind == errkind.Failed {
				if err != nil || !jobs.KillRequested(root, k.Job.Agent, k.Job.ID) {
					t.Errorf("KillJob = %+v, %v; want a kill file", k, err)
				}
				return
			}
			if !errkind.Is(err, tt.kind) {
				t.Errorf("KillJob = %v, want %s", err, tt.kind)
			}
		})
	}
	if _, err := m.KillJob(ctx, Actor{Name: "alice"}, KillRequest{Job: done.ID}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("a finished job: %v, want ErrNotRunning", err)
	}
}

// TestViewerJobs: an agent sees its own jobs and those answering it on
// its channel, and every job of the sessions it delegated.
func TestViewerJobs(t *testing.T) {
	m, root := testMount(t)
	ctx := context.Background()
	start := func(agent, ch, from string) jobs.Job {
		t.Helper()
		j := jobs.Job{ID: jobs.NewID(), Agent: agent, Host: "h", Channel: ch, Message: "msg-20260310-120000-x-0001", From: from, CLI: "fake"}
		if _, err := jobs.Start(root, j, nil); err != nil {
			t.Fatal(err)
		}
		return j
	}
	own := start("lead", "dev", "human")
	asked := start("codex", "dev", "lead")
	start("codex", "ops", "lead")   // another channel
	start("claude", "dev", "human") // not the lead's
	sess := start("lead-0a1b", "delegate-0a1b", "lead")
	if err := sessions.Create(root, &sessions.Session{ID: "0a1b", Agent: "lead-0a1b", DelegatedBy: "lead",
		Channel: "delegate-0a1b", Status: sessions.Running, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	js, err := m.Jobs(ctx, JobQuery{Viewer: "lead", Channel: "dev"})
	got := map[string]bool{}
	for _, j := range js {
		got[j.ID] = true
	}
	if err != nil || len(js) != 3 || !got[own.ID] || !got[asked.ID] || !got[sess.ID] {
		t.Errorf("Jobs(viewer lead) = %d jobs %v, %v; want its own, the one it asked and its session's", len(js), got, err)
	}
	if j, err := m.Job(ctx, JobQuery{Viewer: "lead", Channel: "dev"}, sess.ID); err != nil || j.ID != sess.ID {
		t.Errorf("Job(session's) = %v, %v", j.ID, err)
	}
	if _, err := m.Job(ctx, JobQuery{Viewer: "claude", Channel: "dev"}, sess.ID); !errkind.Is(err, errkind.NotFound) {
		t.Errorf("Job(another's session's job) = %v, want NotFound", err)
	}
}
