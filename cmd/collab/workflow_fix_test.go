package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
)

// runningRecord writes the record of a running instance i1 of workflow
// review, owned by this (live) process, with agents reviewer and coder in
// channel review--i1.
func runningRecord(t *testing.T, root string) workflow.Record {
	t.Helper()
	r := workflow.Record{Name: "review", Instance: "i1", Host: hostname(), PID: os.Getpid(), Started: time.Now().UTC(),
		Status: workflow.Starting, Agents: []string{"reviewer--i1", "coder--i1"}, Channel: "review--i1"}
	if err := workflow.WriteRecord(tree.Root(root), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestInstanceAliasReaders: a kickoff that says "@reviewer" in an
// instance's channel is for reviewer@i1 in collab status (not a
// broadcast) and in collab inbox --agent reviewer--i1; the same words in
// another channel are not for reviewer--i1.
func TestInstanceAliasReaders(t *testing.T) {
	root, env := newWorkflowRoot(t)
	runningRecord(t, root)
	kick := send(t, root, "review--i1", "human", "all", "the diff\n@reviewer please review")
	send(t, root, "dev", "human", "all", "@reviewer please review elsewhere")

	r := runCollab(t, env, "", "status", kick)
	if r.code != 0 || !strings.Contains(r.stdout, "reviewer@i1") || strings.Contains(r.stdout, "broadcast") {
		t.Errorf("status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, env, "", "inbox", "--peek", "--agent", "reviewer--i1")
	if r.code != 0 || !strings.Contains(r.stdout, kick) || strings.Contains(r.stdout, "elsewhere") {
		t.Errorf("inbox --agent reviewer--i1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, env, "", "inbox", "--peek", "--agent", "coder--i1")
	if strings.Contains(r.stdout, kick) {
		t.Errorf("inbox --agent coder--i1 shows the kickoff for reviewer:\n%s", r.stdout)
	}
}

// TestReadShowsInstanceAgents: collab read shows an instance agent's id
// NAME--INSTANCE as NAME@INSTANCE, sender and recipient.
func TestReadShowsInstanceAgents(t *testing.T) {
	root, env := newWorkflowRoot(t)
	send(t, root, "review--i1", "reviewer--i1", "coder--i1", "please fix")
	r := runCollab(t, env, "", "read", "--channel", "review--i1")
	if r.code != 0 || !strings.Contains(r.stdout, "reviewer@i1") || !strings.Contains(r.stdout, "coder@i1") ||
		strings.Contains(r.stdout, "→ coder--i1") {
		t.Errorf("read: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestRunningInstanceRefused: run, start and start --background of an
// instance that is already running are refused with exit 2 before any
// setup step runs.
func TestRunningInstanceRefused(t *testing.T) {
	root, env := newWorkflowRoot(t)
	runningRecord(t, root)
	mark := filepath.Join(t.TempDir(), "setup-ran")
	p := writeWorkflow(t, "name: review\nagents:\n  reviewer:\n    cli: command\n    cmd: cat\nsetup:\n  - shell: touch "+mark+"\nkickoff: \"@reviewer hi\"\n")
	t.Setenv("COLLAB_TEST_AS", "collab") // start --background re-executes the test binary as collab
	for _, args := range [][]string{
		runArgs("--instance", "i1", p),
		startArgs("--instance", "i1", p),
		startArgs("--background", "--root", root, "--instance", "i1", p),
	} {
		r := runCollabAs(t, "human", env, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "already") {
			t.Errorf("%s: exit %d, stderr %q; want %d", strings.Join(args, " "), r.code, r.stderr, exitUsage)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Fatalf("%s: the setup step ran", strings.Join(args, " "))
		}
	}
}

// TestRunRefusedDuringSetup: a second run of an instance whose first run
// is still in its setup step is refused with exit 2, and its setup never
// runs; the first run then goes on to done. (Before the record was
// written ahead of setup, both runs set up and started.)
func TestRunRefusedDuringSetup(t *testing.T) {
	root, env := newWorkflowRoot(t)
	dir := t.TempDir()
	gate, count := filepath.Join(dir, "gate"), filepath.Join(dir, "count")
	p := writeWorkflow(t, "name: race\nagents:\n  a:\n    cli: command\n    cmd: cat\nsetup:\n  - shell: echo >> "+count+
		"; while [ ! -e "+gate+" ]; do sleep 0.05; done\nkickoff: \"@a hi\"\n")
	first := make(chan result, 1)
	go func() { first <- runCollabAs(t, "human", env, "", runArgs("--instance", "r1", p)...) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if data, err := os.ReadFile(count); err == nil && len(data) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first run's setup never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rec := readRecord(t, root, "race", "r1"); rec.Status != workflow.Starting {
		t.Fatalf("record during setup: status %q, want %q", rec.Status, workflow.Starting)
	}
	second := runCollabAs(t, "human", env, "", runArgs("--instance", "r1", p)...)
	if second.code != exitUsage || !strings.Contains(second.stderr, "already starting") {
		t.Errorf("second run: exit %d, stderr %q; want %d, already starting", second.code, second.stderr, exitUsage)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := <-first; r.code != 0 {
		t.Fatalf("first run: exit %d, stderr %q", r.code, r.stderr)
	}
	if data, _ := os.ReadFile(count); strings.Count(string(data), "\n") != 1 {
		t.Errorf("setup ran %d times, want 1", strings.Count(string(data), "\n"))
	}
	if rec := readRecord(t, root, "race", "r1"); rec.Status != workflow.Done {
		t.Errorf("record after the run: status %q, want done", rec.Status)
	}
}

// TestFailedRerunKeepsRecord: a rerun of a finished instance whose setup
// fails puts the finished run's record back.
func TestFailedRerunKeepsRecord(t *testing.T) {
	root, env := newWorkflowRoot(t)
	done := workflow.Record{Name: "broken", Instance: "f1", Host: hostname(), PID: 1, Started: time.Now().UTC().Add(-time.Hour),
		Status: workflow.Done, Agents: []string{"a--f1"}, Channel: "broken--f1"}
	if err := workflow.WriteRecord(tree.Root(root), &done); err != nil {
		t.Fatal(err)
	}
	p := writeWorkflow(t, "name: broken\nagents:\n  a:\n    cli: command\n    cmd: cat\nsetup:\n  - shell: exit 3\nkickoff: \"@a hi\"\n")
	if r := runCollabAs(t, "human", env, "", runArgs("--instance", "f1", p)...); r.code != 1 {
		t.Fatalf("exit %d, stderr %q; want 1", r.code, r.stderr)
	}
	if rec := readRecord(t, root, "broken", "f1"); rec.Status != workflow.Done || rec.PID != 1 {
		t.Errorf("record after the failed rerun: %+v; want the finished run's", rec)
	}
}
