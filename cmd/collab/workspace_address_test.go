package main

import (
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestInboxAgentAddress: inbox --agent NAME@INSTANCE reads the inbox of
// the instance agent NAME--INSTANCE (what is sent to it, and what says
// @NAME in its instance's channel), and acknowledges as it.
func TestInboxAgentAddress(t *testing.T) {
	root, env := newWorkflowRoot(t)
	runningRecord(t, root)
	direct := send(t, root, "dev", "human", "coder--i1", "please fix the build")
	kick := send(t, root, "review--i1", "human", "all", "@coder the diff")
	send(t, root, "dev", "human", "coder", "for plain coder")

	r := runCollab(t, env, "", "inbox", "--peek", "--agent", "coder@i1")
	if r.code != 0 || !strings.Contains(r.stdout, direct) || !strings.Contains(r.stdout, kick) ||
		strings.Contains(r.stdout, "plain coder") {
		t.Fatalf("inbox --peek --agent coder@i1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "human → coder@i1") || strings.Contains(r.stdout, "coder--i1") {
		t.Errorf("inbox shows the instance agent as coder@i1, never coder--i1:\n%s", r.stdout)
	}
	if r := runCollab(t, env, "", "inbox", "ack", "--agent", "coder@i1", "--until", direct); r.code != 0 {
		t.Fatalf("inbox ack --agent coder@i1: exit %d %s", r.code, r.stderr)
	}
	r = runCollab(t, env, "", "inbox", "--agent", "coder--i1")
	if r.code != 0 || strings.Contains(r.stdout, direct) || !strings.Contains(r.stdout, kick) {
		t.Errorf("after ack, inbox --agent coder--i1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, bad := range []string{"@i1", "coder@", "co der@i1"} {
		if r := runCollab(t, env, "", "inbox", "--agent", bad); r.code != exitUsage {
			t.Errorf("inbox --agent %q: exit %d, want %d (%s)", bad, r.code, exitUsage, r.stderr)
		}
	}
}

// TestJobsAgentAddress: jobs --agent NAME@INSTANCE lists the jobs of
// NAME--INSTANCE, shown as NAME@INSTANCE; jobs show and jobs kill --of
// take the same name.
func TestJobsAgentAddress(t *testing.T) {
	root := tree.Root(newTree(t))
	j := jobs.Job{ID: jobs.NewID(), Agent: "coder--i1", Host: "elsewhere", Channel: "review--i1",
		Message: "msg-20260310-120000-alice-0001", From: "alice", CLI: "fake", Started: time.Now().UTC()}
	if _, err := jobs.Start(root, j, nil); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"COLLAB_ROOT": string(root), "COLLAB_AGENT": "alice"}
	r := runCollab(t, env, "", "jobs", "--agent", "coder@i1")
	rows := jobRows(t, r.stdout)
	if r.code != 0 || len(rows) != 1 || rows[0][0] != j.ID || rows[0][1] != "coder@i1" {
		t.Fatalf("jobs --agent coder@i1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCollab(t, env, "", "jobs"); !strings.Contains(r.stdout, " coder@i1 ") || strings.Contains(r.stdout, "coder--i1") {
		t.Errorf("jobs shows coder--i1 as coder@i1:\n%s", r.stdout)
	}
	r = runCollab(t, env, "", "jobs", "show", j.ID, "--agent", "coder@i1")
	if r.code != 0 || !strings.Contains(r.stdout, "agent coder@i1@elsewhere") {
		t.Errorf("jobs show --agent coder@i1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, env, "", "jobs", "kill", j.ID, "--of", "coder@i1")
	if r.code != 0 || r.stdout != "asked coder@i1's watcher on elsewhere to stop "+j.ID+"\n" {
		t.Errorf("jobs kill --of coder@i1: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if !jobs.KillRequested(root, "coder--i1", j.ID) {
		t.Error("jobs kill --of coder@i1 asked nothing of coder--i1's job")
	}
}

// TestTaskAgentAddress: task --agent NAME@INSTANCE acts as the instance
// agent NAME--INSTANCE, shown as NAME@INSTANCE.
func TestTaskAgentAddress(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev"}
	if r := runCollab(t, env, "", "task", "add", "--agent", "lead", "--title", "parser"); r.code != 0 {
		t.Fatalf("task add: exit %d %s", r.code, r.stderr)
	}
	r := runCollab(t, env, "", "task", "claim", "t1", "--agent", "coder@i1")
	if r.code != 0 || r.stdout != "t1 claimed by coder@i1\n" {
		t.Fatalf("task claim --agent coder@i1: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	if r := runCollab(t, env, "", "task", "checkpoint", "t1", "--agent", "coder--i1", "lexer done"); r.code != 0 {
		t.Errorf("checkpoint by coder--i1 of coder@i1's task: exit %d %s", r.code, r.stderr)
	}
	r = runCollab(t, env, "", "task", "claim", "t1", "--agent", "coder@i2")
	if r.code != exitRefused || !strings.Contains(r.stderr, "claimed by coder@i1") {
		t.Errorf("claim by coder@i2: exit %d %s", r.code, r.stderr)
	}
	if r := runCollab(t, env, "", "task", "show", "t1"); !strings.Contains(r.stdout, "checkpoint coder@i1") || strings.Contains(r.stdout, "coder--i1") {
		t.Errorf("task show:\n%s", r.stdout)
	}
}
