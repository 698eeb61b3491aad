package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/presence"
)

// answeringWorkflow is a two-agent workflow whose CLI (the test binary
// as the fake CLI, through a script, so a detached collab runs it too)
// answers every message at once with "ok MESSAGE-ID".
func answeringWorkflow(t *testing.T) string {
	t.Helper()
	cli := filepath.Join(t.TempDir(), "fake-cli")
	script := "#!/bin/sh\nCOLLAB_TEST_AS=cli exec '" + os.Args[0] + "' \"$@\"\n"
	if err := os.WriteFile(cli, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return writeWorkflow(t, "name: pair\nagents:\n  a:\n    cli: command\n    cmd: "+cli+"\n  b:\n    cli: command\n    cmd: "+cli+"\nkickoff: \"@a hi\"\n")
}

// awake reports whether agent's presence says AWAKE.
func awake(root, agent string) bool {
	s, err := presence.Read(tree.Root(root), agent)
	return err == nil && s.State == presence.StateAwake
}

// TestStopOneAgent: collab stop NAME@INSTANCE stops that one agent (its
// watcher OFFLINE, the record lists it as stopped, ls marks it) while
// the others run on and keep answering; stop @INSTANCE then stops the
// whole instance. The same whether the team runs under collab run,
// collab start or start --background.
func TestStopOneAgent(t *testing.T) {
	for _, mode := range []string{"run", "start", "background"} {
		t.Run(mode, func(t *testing.T) {
			root, env := newWorkflowRoot(t)
			p := answeringWorkflow(t)
			inst := "one-" + mode
			done := make(chan result, 1)
			switch mode {
			case "run":
				args := append(runArgs("--instance", inst, "--timeout", "90s", p), "--quiet", "90s")
				go func() { done <- runCollabAs(t, "human", env, "", args...) }()
			case "start":
				go func() { done <- runCollabAs(t, "human", env, "", startArgs("--instance", inst, p)...) }()
			case "background":
				t.Setenv("COLLAB_TEST_AS", "collab") // the detached start is this binary as collab
				if r := runCollabAs(t, "human", env, "", startArgs("--background", "--root", root, "--instance", inst, p)...); r.code != 0 {
					t.Fatalf("start --background: %+v", r)
				}
				done <- result{}
			}
			a, b := "a--"+inst, "b--"+inst
			waitFor(t, func() bool {
				r, err := workflow.ReadRecord(tree.Root(root), "pair", inst)
				return err == nil && r.Status == workflow.Running && awake(root, a) && awake(root, b)
			})
			if r := runCollab(t, env, "", "stop", "--timeout", "30s", "a@"+inst); r.code != 0 || !strings.Contains(r.stdout, "a@"+inst+": stopped") {
				t.Fatalf("stop a@%s: %+v", inst, r)
			}
			if awake(root, a) || !awake(root, b) {
				t.Fatalf("after stop a@%s: a awake %v, b awake %v; want only b", inst, awake(root, a), awake(root, b))
			}
			rec := readRecord(t, root, "pair", inst)
			if rec.Status != workflow.Running || !slices.Equal(rec.Stopped, []string{a}) {
				t.Errorf("record %+v, want running with a stopped", rec)
			}
			if ls := runCollab(t, env, "", "ls"); !strings.Contains(ls.stdout, "a@"+inst+"(stopped)") || !strings.Contains(ls.stdout, "running") {
				t.Errorf("ls:\n%s", ls.stdout)
			}
			// b still answers.
			sent := runCollab(t, env, "", "send", "--agent", "human", "--channel", "pair--"+inst, "--to", "b@"+inst, "--json", "ping")
			var m struct{ ID string }
			if err := json.Unmarshal([]byte(sent.stdout), &m); sent.code != 0 || err != nil {
				t.Fatalf("send: %+v", sent)
			}
			waitFor(t, func() bool {
				return strings.Contains(runCollab(t, env, "", "read", "--channel", "pair--"+inst).stdout, "ok "+m.ID)
			})
			if r := runCollab(t, env, "", "stop", "a@"+inst); r.code != exitRefused {
				t.Errorf("stop of a stopped agent: exit %d, want %d", r.code, exitRefused)
			}
			if r := runCollab(t, env, "", "stop", "--timeout", "30s", "@"+inst); r.code != 0 {
				t.Fatalf("stop @%s: %+v", inst, r)
			}
			allOffline(t, root, rec)
			r := <-done
			switch mode {
			case "run":
				if r.code != exitFailure || !strings.Contains(r.stderr, "stopped by collab stop") {
					t.Errorf("run: %+v", r)
				}
			case "start":
				if r.code != 0 {
					t.Errorf("start: %+v", r)
				}
			case "background":
				waitFor(t, func() bool { return !proc.PIDAlive(rec.PID) || isZombie(rec.PID) })
			}
			if rec := readRecord(t, root, "pair", inst); rec.Status != workflow.Stopped {
				t.Errorf("record status %q, want stopped", rec.Status)
			}
		})
	}
}
