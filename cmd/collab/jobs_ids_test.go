package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// twoAgentsOneMessage records a running job of codex and of claude for
// one message, as two watchers write them, and returns them.
func twoAgentsOneMessage(t *testing.T, root tree.Root, msg string) (codex, claude jobs.Job) {
	t.Helper()
	start := func(agent string) jobs.Job {
		r, err := jobs.Start(root, jobs.Job{ID: jobs.NewID(), Agent: agent, Host: "elsewhere", Channel: "general",
			Message: msg, From: "alice", CLI: "fake"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r.Job()
	}
	return start("codex"), start("claude")
}

// TestJobsAmbiguousID: a message id that names jobs of two agents is
// refused by jobs show and jobs kill (exit 2, both listed); --agent (show)
// and --of (kill) narrow it; a job id needs no narrowing.
func TestJobsAmbiguousID(t *testing.T) {
	root := tree.Root(newTree(t))
	msg := "msg-20260310-120000-alice-0001"
	codex, claude := twoAgentsOneMessage(t, root, msg)
	env := map[string]string{"COLLAB_ROOT": string(root), "COLLAB_AGENT": "alice"} // who asked for both jobs
	for _, args := range [][]string{{"jobs", "show", msg}, {"jobs", "kill", msg}} {
		r := runCollab(t, env, "", args...)
		if r.code != 2 || !strings.Contains(r.stderr, codex.ID) || !strings.Contains(r.stderr, claude.ID) {
			t.Errorf("%v: exit %d stderr %q; want 2 naming both jobs", args, r.code, r.stderr)
		}
	}
	r := runCollab(t, env, "", "jobs", "show", msg, "--agent", "claude", "--json")
	var j jobs.Job
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &j) != nil || j.ID != claude.ID {
		t.Errorf("show --agent claude: exit %d stdout %q stderr %q; want %s", r.code, r.stdout, r.stderr, claude.ID)
	}
	r = runCollab(t, env, "", "jobs", "show", codex.ID)
	if r.code != 0 || !strings.Contains(r.stdout, "job "+codex.ID+"  agent codex@elsewhere  running") {
		t.Errorf("show by job id: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := runCollab(t, env, "", "jobs", "show", codex.ID, "--agent", "claude"); r.code != 1 {
		t.Errorf("show codex's job narrowed to claude: exit %d, want 1 (none)", r.code)
	}
	r = runCollab(t, env, "", "jobs", "kill", msg, "--of", "codex")
	if r.code != 0 || !strings.Contains(r.stdout, "to stop "+codex.ID) {
		t.Fatalf("kill --of codex: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if !jobs.KillRequested(root, "codex", codex.ID) || jobs.KillRequested(root, "claude", claude.ID) {
		t.Error("kill --of codex: want codex's job, and only it, asked to stop")
	}
}

// TestJobsInterrupted: a record that says running, left by a watcher
// that is gone (its pid dead on this host and boot), is listed and shown
// as interrupted and cannot be killed; an old record named after its
// message is still listed and shown.
func TestJobsInterrupted(t *testing.T) {
	root := tree.Root(newTree(t))
	gone := jobs.Job{ID: jobs.NewID(), Agent: "codex", Host: jobs.LocalHost(), Boot: jobs.BootID(),
		Channel: "general", Message: "msg-20260310-120000-alice-0001", From: "alice", CLI: "fake",
		Instance: jobs.NewInstance(), WatcherPID: deadPID(t)}
	if gone.Boot == "" {
		t.Skip("no boot id on this system")
	}
	if _, err := jobs.Start(root, gone, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Start(root, jobs.Job{ID: "job-msg-20260310-110000-alice-0002", Agent: "claude", Host: "elsewhere",
		Channel: "general", Message: "msg-20260310-110000-alice-0002", From: "alice", CLI: "fake"}, nil); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"COLLAB_ROOT": string(root), "COLLAB_AGENT": "bob"}
	r := runCollab(t, env, "", "jobs", "--json")
	var list []jobs.Job
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 2 {
		t.Fatalf("jobs --json: %q %v", r.stdout, err)
	}
	status := map[string]string{list[0].ID: list[0].Status, list[1].ID: list[1].Status}
	if status[gone.ID] != jobs.Interrupted || status["job-msg-20260310-110000-alice-0002"] != jobs.Running {
		t.Errorf("jobs: %v; want %s interrupted, the old record running", status, gone.ID)
	}
	r = runCollab(t, env, "", "jobs")
	if !strings.Contains(r.stdout, "interrupted") || !strings.Contains(r.stdout, "job-msg-20260310-110000-alice-0002") {
		t.Errorf("jobs:\n%s\nwant the interrupted job and the old record", r.stdout)
	}
	if r := runCollab(t, env, "", "jobs", "show", gone.ID); !strings.Contains(r.stdout, "  interrupted  ") {
		t.Errorf("jobs show: %q; want interrupted", r.stdout)
	}
	if r := runCollab(t, env, "", "jobs", "kill", gone.ID); r.code != 1 || !strings.Contains(r.stderr, "interrupted, not running") {
		t.Errorf("jobs kill: exit %d stderr %q; want 1, not running", r.code, r.stderr)
	}
}
