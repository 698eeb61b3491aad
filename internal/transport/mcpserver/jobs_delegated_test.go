package mcpserver

import (
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// TestJobToolsDelegatedSessions: a delegator reads the jobs of the
// sessions it delegated (their agent works on the session's own
// channel), with job_list and job_show; another agent does not.
func TestJobToolsDelegatedSessions(t *testing.T) {
	root := tree.Root(t.TempDir())
	j := jobs.Job{ID: jobs.NewID(), Agent: "claude-0a1b", Host: "vm-2", Channel: "delegate-0a1b",
		Message: "msg-20260310-120000-claude-0001", From: "claude", CLI: "fake"}
	if _, err := jobs.Start(root, j, nil); err != nil {
		t.Fatal(err)
	}
	if err := sessions.Create(root, &sessions.Session{ID: "0a1b", Agent: "claude-0a1b", DelegatedBy: "claude",
		Channel: "delegate-0a1b", Status: sessions.Running, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	_, cs := connect(t, root)
	var list JobListResult
	if e := call(t, cs, "job_list", nil, &list); e != "" || len(list.Jobs) != 1 || list.Jobs[0].ID != j.ID {
		t.Fatalf("job_list of the delegator = %+v, %q; want its session's job", list, e)
	}
	var show JobShowResult
	if e := call(t, cs, "job_show", map[string]any{"id": j.ID}, &show); e != "" || show.Agent != "claude-0a1b" {
		t.Errorf("job_show of its session's job = %+v, %q", show, e)
	}
	_, other := connectAs(t, root, "codex", "dev")
	if e := call(t, other, "job_show", map[string]any{"id": j.ID}, nil); e == "" {
		t.Error("job_show of another agent's session's job: no error")
	}
}
