package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/presence"
)

var (
	standinOnce sync.Once
	standinDir  string
	standinErr  error
)

// withStandin puts demo/standin, built once, on PATH (examples name it
// as cmd: standin).
func withStandin(t *testing.T) {
	t.Helper()
	standinOnce.Do(func() {
		standinDir, standinErr = os.MkdirTemp("", "standin")
		if standinErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(standinDir, "standin"), "../../demo/standin").CombinedOutput()
		if err != nil {
			standinErr = &exitError{msg: string(out)}
		}
	})
	if standinErr != nil {
		t.Fatalf("build the stand-in: %v", standinErr)
	}
	t.Setenv("PATH", standinDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// newWorkflowRoot makes a tree and returns its root and the environment.
func newWorkflowRoot(t *testing.T) (string, map[string]string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "tree")
	env := map[string]string{"COLLAB_ROOT": root}
	if r := runCollab(t, env, "", "init"); r.code != 0 {
		t.Fatalf("init: %+v", r)
	}
	return root, env
}

// fast are the flags that make a team's watchers quick to start and stop.
var fast = []string{"--poll", "50ms", "--heartbeat", "1s", "--grace", "1s", "--quiet", "1s"}

func runArgs(args ...string) []string {
	return append(append([]string{"run"}, fast...), args...)
}

func startArgs(args ...string) []string {
	var f []string
	for i := 0; i < len(fast); i += 2 {
		if fast[i] != "--quiet" {
			f = append(f, fast[i], fast[i+1])
		}
	}
	return append(append([]string{"start"}, f...), args...)
}

func readRecord(t *testing.T, root, name, instance string) workflow.Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tree.Root(root).Workflows(), workflow.RecordName(name, instance)))
	if err != nil {
		t.Fatal(err)
	}
	var r workflow.Record
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// allOffline fails unless every agent of the record is OFFLINE.
func allOffline(t *testing.T, root string, r workflow.Record) {
	t.Helper()
	if len(r.Agents) == 0 {
		t.Fatal("no agents in the record")
	}
	for _, a := range r.Agents {
		s, err := presence.Read(tree.Root(root), a)
		if err != nil || s.State != presence.StateOffline {
			t.Errorf("%s: presence %+v (%v), want OFFLINE", a, s, err)
		}
	}
}

func writeWorkflow(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "wf.yaml")
	if err := os.WriteFile(p, []byte(text), 0o666); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunStandinDone: the shipped three-agent example runs to done with
// the stand-in model, exits 0, prints the conversation and the result,
// records done and leaves every agent OFFLINE.
func TestRunStandinDone(t *testing.T) {
	withStandin(t)
	root, env := newWorkflowRoot(t)
	r := runCollabAs(t, "human", env, "", runArgs("--instance", "t1", "--timeout", "60s", "../../examples/standin/release.yaml")...)
	if r.code != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"@lead @reviewer please ask coder", "v1.4.0", "fine by me", "release@t1: done", "coder@t1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	rec := readRecord(t, root, "release", "t1")
	if rec.Status != workflow.Done || rec.Channel != "release--t1" || rec.Finished.IsZero() {
		t.Errorf("record %+v, want done in release--t1", rec)
	}
	allOffline(t, root, rec)
	// Every agent worked: each was addressed by its name in the channel.
	for _, a := range []string{"lead--t1", "reviewer--t1", "coder--t1"} {
		if !strings.Contains(r.stdout, a) {
			t.Errorf("no message from %s", a)
		}
	}
	ls := runCollab(t, env, "", "ls")
	if !strings.Contains(ls.stdout, "release") || !strings.Contains(ls.stdout, "done") || !strings.Contains(ls.stdout, "lead@t1") {
		t.Errorf("ls:\n%s", ls.stdout)
	}
}

// TestRunJSONResult: --json ends with the result object.
func TestRunJSONResult(t *testing.T) {
	withStandin(t)
	_, env := newWorkflowRoot(t)
	r := runCollabAs(t, "human", env, "", runArgs("--json", "--instance", "j1", "../../examples/standin/release.yaml")...)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var res struct{ Result runResult }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatal(err)
	}
	if res.Result.Status != workflow.Done || len(res.Result.Agents) != 3 || res.Result.Last == nil {
		t.Fatalf("result %+v", res.Result)
	}
	for _, a := range res.Result.Agents {
		if a.Jobs == 0 {
			t.Errorf("%s ran no job", a.Agent)
		}
	}
}

// TestRunSetupFailure: a failing setup step stops the run before any
// agent starts, with its stderr shown: exit 1.
func TestRunSetupFailure(t *testing.T) {
	root, env := newWorkflowRoot(t)
	p := writeWorkflow(t, "name: broken\nagents:\n  a:\n    cli: command\n    cmd: cat\nsetup:\n  - shell: echo the-step-said-no >&2; exit 3\nkickoff: \"@a hi\"\n")
	r := runCollabAs(t, "human", env, "", runArgs("--instance", "s1", p)...)
	if r.code != 1 || !strings.Contains(r.stderr, "the-step-said-no") {
		t.Fatalf("exit %d, stderr %q; want 1 with the step's stderr", r.code, r.stderr)
	}
	if ents, _ := os.ReadDir(tree.Root(root).Workflows()); len(ents) > 0 {
		t.Errorf("an instance record was left: %v", ents)
	}
	if _, err := presence.Read(tree.Root(root), "a--s1"); err == nil {
		t.Error("the agent started")
	}
}

// TestRunUnknownVariable: an unknown ${{ name }} is a usage error before
// anything starts.
func TestRunUnknownVariable(t *testing.T) {
	root, env := newWorkflowRoot(t)
	p := writeWorkflow(t, "name: vars\nagents:\n  a:\n    cli: command\n    cmd: cat\nkickoff: \"@a ${{ nope }}\"\n")
	r := runCollabAs(t, "human", env, "", runArgs("--instance", "v1", p)...)
	if r.code != 2 || !strings.Contains(r.stderr, "nope") {
		t.Fatalf("exit %d, stderr %q; want 2 naming the variable", r.code, r.stderr)
	}
	if ents, _ := os.ReadDir(tree.Root(root).Workflows()); len(ents) > 0 {
		t.Errorf("an instance record was left: %v", ents)
	}
}

// slowWorkflow is a workflow whose one agent's CLI (the test binary as the
// fake CLI) sleeps, recording its pid in dir.
func slowWorkflow(t *testing.T, dir string) string {
	t.Helper()
	t.Setenv("COLLAB_TEST_AS", "cli")
	t.Setenv("FAKE_CLI_SLEEP", "60s")
	t.Setenv("FAKE_CLI_STARTED", dir)
	return writeWorkflow(t, "name: slow\nagents:\n  a:\n    cli: command\n    cmd: "+strconv.Quote(os.Args[0])+"\n  b:\n    cli: command\n    cmd: "+strconv.Quote(os.Args[0])+"\nkickoff: \"@a take your time\"\n")
}

// noCLILeft fails if a pid the fake CLI recorded in dir is alive.
func noCLILeft(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	if len(ents) == 0 {
		t.Error("the CLI never started")
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && proc.PIDAlive(pid) && !isZombie(pid) {
			t.Errorf("CLI process %d is still alive", pid)
		}
	}
}

// TestRunTimeout: a team not done by --timeout exits 3, records timeout,
// and stops its watchers and their CLI.
func TestRunTimeout(t *testing.T) {
	root, env := newWorkflowRoot(t)
	pids := t.TempDir()
	p := slowWorkflow(t, pids)
	r := runCollabAs(t, "human", env, "", runArgs("--instance", "to1", "--timeout", "2s", p)...)
	if r.code != 3 {
		t.Fatalf("exit %d, want 3\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	rec := readRecord(t, root, "slow", "to1")
	if rec.Status != workflow.Timeout {
		t.Errorf("record status %q, want timeout", rec.Status)
	}
	allOffline(t, root, rec)
	noCLILeft(t, pids)
}

// TestRunInterrupted: cancelling run's context (Ctrl-C) stops its
// watchers: every agent OFFLINE, no CLI left, the record says stopped.
func TestRunInterrupted(t *testing.T) {
	root, env := newWorkflowRoot(t)
	pids := t.TempDir()
	p := slowWorkflow(t, pids)
	ctx, cancel := context.WithCancel(withLogin(context.Background(), func() string { return "human" }))
	defer cancel()
	go func() {
		waitFor(t, func() bool {
			ents, _ := os.ReadDir(pids)
			return len(ents) > 0 // the CLI runs
		})
		cancel()
	}()
	r := runCollabCtx(t, ctx, env, "", runArgs("--instance", "int1", p)...)
	if r.code == 0 {
		t.Fatalf("exit 0 after an interrupt\n%s", r.stderr)
	}
	rec := readRecord(t, root, "slow", "int1")
	if rec.Status != workflow.Stopped {
		t.Errorf("record status %q, want stopped", rec.Status)
	}
	allOffline(t, root, rec)
	noCLILeft(t, pids)
}

// TestStartStopInstance: collab start keeps the team up until collab stop
// @INSTANCE, which returns once every agent is OFFLINE, with no CLI left.
func TestStartStopInstance(t *testing.T) {
	root, env := newWorkflowRoot(t)
	pids := t.TempDir()
	p := slowWorkflow(t, pids)
	done := make(chan result, 1)
	go func() {
		done <- runCollabAs(t, "human", env, "", startArgs("--instance", "st1", p)...)
	}()
	waitFor(t, func() bool {
		ents, _ := os.ReadDir(pids)
		return len(ents) > 0
	})
	ls := runCollab(t, env, "", "ls")
	if !strings.Contains(ls.stdout, "running") {
		t.Errorf("ls while running:\n%s", ls.stdout)
	}
	who := runCollab(t, env, "", "who")
	if !strings.Contains(who.stdout, "a@st1") || !strings.Contains(who.stdout, "b@st1") {
		t.Errorf("who does not show NAME@INSTANCE:\n%s", who.stdout)
	}
	r := runCollab(t, env, "", "stop", "--timeout", "30s", "@st1")
	if r.code != 0 {
		t.Fatalf("stop: %+v", r)
	}
	rec := readRecord(t, root, "slow", "st1")
	allOffline(t, root, rec)
	noCLILeft(t, pids)
	if s := <-done; s.code != 0 {
		t.Errorf("start: %+v", s)
	}
	if rec := readRecord(t, root, "slow", "st1"); rec.Status != workflow.Stopped {
		t.Errorf("record status %q, want stopped", rec.Status)
	}
	if r := runCollab(t, env, "", "stop", "@st1"); r.code != 3 {
		t.Errorf("stop of a stopped instance: exit %d, want 3", r.code)
	}
}

// TestRunTwoInstances: two instances of one workflow at once have their
// own agents' presence, claims and channel.
func TestRunTwoInstances(t *testing.T) {
	withStandin(t)
	root, env := newWorkflowRoot(t)
	var wg sync.WaitGroup
	res := make([]result, 2)
	for i, inst := range []string{"one", "two"} {
		wg.Go(func() {
			res[i] = runCollabAs(t, "human", env, "", runArgs("--instance", inst, "../../examples/standin/release.yaml")...)
		})
	}
	wg.Wait()
	for i, r := range res {
		if r.code != 0 {
			t.Fatalf("instance %d: exit %d\n%s\n%s", i, r.code, r.stdout, r.stderr)
		}
	}
	for _, inst := range []string{"one", "two"} {
		rec := readRecord(t, root, "release", inst)
		if rec.Channel != "release--"+inst {
			t.Errorf("channel %q", rec.Channel)
		}
		allOffline(t, root, rec)
		for _, a := range rec.Agents {
			if !strings.HasSuffix(a, "--"+inst) {
				t.Errorf("agent %s of instance %s", a, inst)
			}
		}
		claims, _ := os.ReadDir(tree.Root(root).Claims(rec.Channel))
		for _, c := range claims {
			if !strings.HasSuffix(c.Name(), "--"+inst) && !strings.HasPrefix(c.Name(), ".") {
				t.Errorf("claims of %s in %s", c.Name(), rec.Channel)
			}
		}
	}
	// Neither instance's messages are in the other's channel.
	one := runCollab(t, env, "", "read", "--channel", "release--one")
	if strings.Contains(one.stdout, "--two") {
		t.Errorf("instance two wrote into instance one's channel:\n%s", one.stdout)
	}
}

// TestSendToInstanceAgent: send --to NAME@INSTANCE addresses the agent
// NAME--INSTANCE.
func TestSendToInstanceAgent(t *testing.T) {
	_, env := newWorkflowRoot(t)
	r := runCollab(t, env, "", "send", "--agent", "human", "--channel", "c", "--to", "reviewer@pr-123", "--json", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, `"to":"reviewer--pr-123"`) {
		t.Fatalf("send: %+v", r)
	}
	if r := runCollab(t, env, "", "send", "--agent", "human", "--channel", "c", "--to", "@pr-123", "hi"); r.code != 2 {
		t.Errorf("send --to @INSTANCE: exit %d, want 2", r.code)
	}
}

// TestRunRealClaude: a two-agent workflow of real Claude Code CLIs
// against the fake model server runs to done (skipped without the CLI
// unless COLLAB_TEST_REQUIRE_CLIS says it is required).
func TestRunRealClaude(t *testing.T) {
	srv := fakemodel.Start(t)
	c := srv.CLI(t, fakemodel.ClaudeCode)
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	root, env := newWorkflowRoot(t)
	agent := func(name string) string {
		return "  " + name + ":\n    cli: claude\n    cmd: " + strconv.Quote(c.Path) + "\n    model: " + strconv.Quote(c.Model) +
			"\n    workdir: " + strconv.Quote(c.Dir) + "\n    timeout: 60s\n"
	}
	p := writeWorkflow(t, "name: pair\nagents:\n"+agent("reviewer")+agent("coder")+"kickoff: \"@reviewer please review the change\"\n")
	srv.Next(fakemodel.Text("@coder please fix the typo"), fakemodel.Text("fixed it"))
	srv.Always(fakemodel.Text("NO_REPLY"))
	r := runCollabAs(t, "human", env, "", runArgs("--instance", "c1", "--timeout", "3m", p)...)
	if r.code != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"@coder please fix the typo", "fixed it", "pair@c1: done"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	allOffline(t, root, readRecord(t, root, "pair", "c1"))
}

// TestStartBackground: start --background returns once every agent is
// AWAKE, the detached process keeps them up, and stop @INSTANCE ends it.
func TestStartBackground(t *testing.T) {
	root, env := newWorkflowRoot(t)
	pids := t.TempDir()
	p := slowWorkflow(t, pids)
	t.Setenv("COLLAB_TEST_AS", "collab") // the re-executed test binary runs main
	r := runCollabAs(t, "human", env, "", startArgs("--background", "--root", root, "--instance", "bg", p)...)
	if r.code != 0 {
		t.Fatalf("start --background: %+v", r)
	}
	rec := readRecord(t, root, "slow", "bg")
	if rec.Status != workflow.Running || rec.PID == os.Getpid() {
		t.Fatalf("record %+v, want running in another process", rec)
	}
	for _, a := range rec.Agents {
		if s, err := presence.Read(tree.Root(root), a); err != nil || s.State != presence.StateAwake {
			t.Errorf("%s not AWAKE after start --background: %+v", a, s)
		}
	}
	if r := runCollab(t, env, "", "stop", "--timeout", "30s", "slow@bg"); r.code != 0 {
		t.Fatalf("stop: %+v", r)
	}
	allOffline(t, root, rec)
	waitFor(t, func() bool { return !proc.PIDAlive(rec.PID) || isZombie(rec.PID) })
	if rec := readRecord(t, root, "slow", "bg"); rec.Status != workflow.Stopped {
		t.Errorf("record status %q, want stopped", rec.Status)
	}
}
