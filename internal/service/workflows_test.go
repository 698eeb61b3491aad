package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/accounts"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/presence"
)

// runningRecord writes the record of a running instance of workflow
// name, run by this process, whose agents are AWAKE (all but those
// stopped on their own).
func runningRecord(t *testing.T, m *Mount, name, instance string, agents []string, stopped ...string) workflow.Record {
	t.Helper()
	root := m.Root()
	r := workflow.Record{Name: name, Instance: instance, File: name + ".yaml", Host: m.cfg.Host, PID: os.Getpid(),
		Started: time.Now().UTC(), Status: workflow.Running, Channel: name + workflow.Sep + instance}
	for _, a := range agents {
		id := a + workflow.Sep + instance
		r.Agents = append(r.Agents, id)
		state := presence.StateAwake
		if slices.Contains(stopped, a) {
			r.Stopped, state = append(r.Stopped, id), presence.StateOffline
		}
		if err := presence.Write(root, presence.Status{AgentID: id, State: state, Substate: presence.SubIdle,
			Host: m.cfg.Host, WatcherPID: os.Getpid(), Channel: r.Channel, Timestamp: presence.FormatTime(time.Now())}); err != nil {
			t.Fatal(err)
		}
	}
	if err := workflow.WriteRecord(root, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func newTestMount(t *testing.T, root string) *Mount {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return NewMount(Config{Root: tree.Root(root)})
}

// TestStopWorkflowRefusals: what StopWorkflow refuses, with its kind,
// writing no stop file; and what it stops.
func TestStopWorkflowRefusals(t *testing.T) {
	m := newTestMount(t, filepath.Join(t.TempDir(), "tree"))
	runningRecord(t, m, "review", "i1", []string{"reviewer", "coder"})
	runningRecord(t, m, "review", "i2", []string{"reviewer", "coder"}, "coder")
	done := workflow.Record{Name: "review", Instance: "i0", Status: workflow.Done, Agents: []string{"reviewer--i0"}}
	if err := workflow.WriteRecord(m.Root(), &done); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		req  StopRequest
		want errkind.Kind
	}{
		{"no instance", StopRequest{Target: "review"}, errkind.Invalid},
		{"empty instance", StopRequest{Target: "review@"}, errkind.Invalid},
		{"bad name", StopRequest{Target: "Bad!@i1"}, errkind.Invalid},
		{"bad instance", StopRequest{Target: "review@a--b"}, errkind.Invalid},
		{"dots", StopRequest{Target: "review@.."}, errkind.Invalid},
		{"instance only, @INSTANCE", StopRequest{Target: "@i1", InstanceOnly: true}, errkind.Invalid},
		{"instance only, an agent", StopRequest{Target: "reviewer@i1", InstanceOnly: true}, errkind.NotFound},
		{"not running", StopRequest{Target: "review@i0"}, errkind.Conflict},
		{"no such instance", StopRequest{Target: "review@i9"}, errkind.NotFound},
		{"no such @instance", StopRequest{Target: "@i9"}, errkind.NotFound},
		{"no such agent", StopRequest{Target: "nobody@i1"}, errkind.NotFound},
		{"agent already stopped", StopRequest{Target: "coder@i2"}, errkind.Conflict},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := m.StopWorkflow(context.Background(), c.req)
			if got := errkind.Of(err); err == nil || got != c.want {
				t.Fatalf("%+v: %v (%v), want %v", c.req, err, got, c.want)
			}
		})
	}
	if ents, _ := filepath.Glob(filepath.Join(m.Root().Workflows(), "*.stop")); len(ents) > 0 {
		t.Fatalf("a refused stop wrote %v", ents)
	}

	got, err := m.StopWorkflow(context.Background(), StopRequest{Target: "coder@i1", By: "alice"})
	if err != nil || len(got) != 1 || got[0].Agent != "coder--i1" || got[0].ID() != "coder@i1" {
		t.Fatalf("stop coder@i1: %+v, %v", got, err)
	}
	data, err := os.ReadFile(filepath.Join(m.Root().Workflows(), workflow.AgentStopNameBy("review", "i1", "coder", os.Geteuid())))
	if err != nil || !strings.Contains(string(data), `"by":"alice"`) {
		t.Fatalf("agent stop file: %s, %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(m.Root().Workflows(), workflow.StopNameBy("review", "i1", os.Geteuid()))); err == nil {
		t.Fatal("stopping one agent asked the whole instance to stop")
	}
	got, err = m.StopWorkflow(context.Background(), StopRequest{Target: "@i1"})
	if err != nil || len(got) != 1 || got[0].Agent != "" || got[0].ID() != "review@i1" {
		t.Fatalf("stop @i1: %+v, %v", got, err)
	}
	got, err = m.StopWorkflow(context.Background(), StopRequest{All: true})
	if err != nil || len(got) != 2 {
		t.Fatalf("stop --all: %+v, %v", got, err)
	}
}

// envStopHelper makes the test binary TestStopWorkflowHelper: it stops
// the target in the tree its value names, and prints the error's kind.
const envStopHelper = "COLLAB_SERVICE_STOP_HELPER"

// TestStopWorkflowHelper is not a test: run by TestStopWorkflowAcrossAccounts
// as another account.
func TestStopWorkflowHelper(t *testing.T) {
	spec := os.Getenv(envStopHelper)
	if spec == "" {
		t.Skip("a helper of TestStopWorkflowAcrossAccounts")
	}
	root, target, _ := strings.Cut(spec, "|")
	_, err := NewMount(Config{Root: tree.Root(root)}).StopWorkflow(context.Background(), StopRequest{Target: target})
	if err == nil {
		fmt.Println("kind: ok")
		return
	}
	fmt.Printf("kind: %v\nerr: %v\n", errkind.Of(err), err)
}

// TestStopWorkflowAcrossAccounts: only the account that runs an instance,
// root or the tree's owner may stop it or one of its agents: another
// member of the tree's group is refused (Forbidden) and writes nothing.
func TestStopWorkflowAcrossAccounts(t *testing.T) {
	s := accounts.Require(t)
	exe := s.Executable(t, os.Args[0])
	root := s.Folder(t, s.Admin, "tree")
	m := newTestMount(t, root)
	rec := runningRecord(t, m, "quick", "x1", []string{"a", "b"})
	wf := m.Root().Workflows()
	if err := os.Chmod(wf, 0o1777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(wf, workflow.RecordName(rec.Name, rec.Instance)), s.Agent.UID, accounts.Group); err != nil {
		t.Fatal(err)
	}
	stop := func(a accounts.Account, target string) string {
		out, errOut, err := a.Try([]string{envStopHelper + "=" + root + "|" + target}, exe, "-test.run=^TestStopWorkflowHelper$", "-test.v")
		if err != nil {
			t.Fatalf("helper as %s: %v\n%s%s", a, err, out, errOut)
		}
		return out
	}
	for _, target := range []string{"a@x1", "quick@x1", "@x1"} {
		if out := stop(s.Mallory, target); !strings.Contains(out, "kind: forbidden") || !strings.Contains(out, "may stop it") {
			t.Errorf("stop %s as %s:\n%s", target, s.Mallory, out)
		}
	}
	if ents, _ := filepath.Glob(filepath.Join(wf, "*.stop")); len(ents) > 0 {
		t.Fatalf("a refused stop wrote %v", ents)
	}
	if out := stop(s.Agent, "a@x1"); !strings.Contains(out, "kind: ok") {
		t.Fatalf("stop a@x1 as %s:\n%s", s.Agent, out)
	}
	if _, err := os.Stat(filepath.Join(wf, workflow.AgentStopNameBy("quick", "x1", "a", s.Agent.UID))); err != nil {
		t.Errorf("the runner's agent stop file: %v", err)
	}
	if out := stop(s.Admin, "quick@x1"); !strings.Contains(out, "kind: ok") {
		t.Fatalf("stop quick@x1 as the tree's owner %s:\n%s", s.Admin, out)
	}
}
