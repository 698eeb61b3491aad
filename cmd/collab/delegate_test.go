package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
	"github.com/collabdev/collab/internal/testsupport/gittest"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/presence"
)

// committingCLI ($FAKE_CLI_COMMIT) commits a file in its working folder
// and answers with where it ran: "ok MESSAGE-ID in WORKTREE on BRANCH for
// DELEGATOR at depth N (cwd DIR) hops MAX-HOPS budget USD".
func committingCLI() {
	io.Copy(io.Discard, os.Stdin)
	id := os.Getenv("COLLAB_MESSAGE_ID")
	name := "work-" + id + ".txt"
	if err := os.WriteFile(name, []byte(id+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, args := range [][]string{{"add", "--", name}, {"commit", "--quiet", "-m", "work for " + id}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "git %v: %v\n%s", args, err, out)
			os.Exit(1)
		}
	}
	wd, _ := os.Getwd()
	fmt.Printf("ok %s in %s on %s for %s at depth %s (cwd %s) hops %s budget %s\n", id, os.Getenv("COLLAB_WORKTREE"), os.Getenv("COLLAB_BRANCH"),
		os.Getenv("COLLAB_DELEGATED_BY"), os.Getenv("COLLAB_DELEGATION_DEPTH"), wd, os.Getenv("COLLAB_MAX_HOPS"), os.Getenv("COLLAB_BUDGET_USD"))
	os.Exit(0)
}

// nestingCLI ($FAKE_CLI_NEST) delegates from its worktree with collab
// delegate --wait and answers "depth N got: ANSWER", or "depth N refused:
// ERROR" when the delegation is refused.
func nestingCLI() {
	io.Copy(io.Discard, os.Stdin)
	os.Setenv("COLLAB_TEST_AS", "collab") // the detached watcher it starts is this binary as collab
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"delegate", "--cli", "command", "--cmd", os.Args[0], "--poll", "100ms",
		"--heartbeat", "1s", "--wait", "--timeout", "2m", "--title", "nested", "go deeper"}, os.Getenv, strings.NewReader(""), &out, &errb)
	depth := os.Getenv("COLLAB_DELEGATION_DEPTH")
	if code := exitCode(err, &errb); code != 0 {
		fmt.Printf("depth %s refused (exit %d): %s", depth, code, errb.String())
		os.Exit(0)
	}
	answer := out.String()
	if _, a, ok := strings.Cut(answer, "\n"); ok {
		answer = a // after the session line
	}
	fmt.Printf("depth %s got: %s", depth, answer)
	os.Exit(0)
}

// delegateEnv is a tree, a repository and the folder worktrees go in, with
// the test binary as collab and as the delegated agent's CLI.
type delegateEnv struct {
	root, repo, wts string
	env             map[string]string
}

func newDelegateEnv(t *testing.T) *delegateEnv {
	t.Helper()
	repo := gittest.Repo(t)
	root, env := newWorkflowRoot(t)
	t.Setenv("COLLAB_TEST_AS", "collab")
	d := &delegateEnv{root: root, repo: repo, wts: filepath.Join(t.TempDir(), "wts"), env: env}
	env["COLLAB_WORKTREES"] = d.wts
	t.Cleanup(func() { // no delegated watcher outlives the test
		list, _ := sessions.List(tree.Root(root))
		for _, s := range list {
			if s.PID > 0 && sessionAlive(&s) {
				proc.EndGroup(s.PID, 0)
			}
		}
	})
	return d
}

// delegate runs collab delegate as human with the fake CLI and the flags.
func (d *delegateEnv) delegate(t *testing.T, flags ...string) result {
	t.Helper()
	args := append([]string{"delegate", "--repo", d.repo, "--cli", "command", "--cmd", os.Args[0],
		"--poll", "100ms", "--heartbeat", "1s"}, flags...)
	return runCollabAs(t, "human", d.env, "", args...)
}

func (d *delegateEnv) session(t *testing.T, id string) *sessions.Session {
	t.Helper()
	s, err := sessions.Find(tree.Root(d.root), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sessionOf is the session a delegate --json printed.
func sessionOf(t *testing.T, r result) *sessions.Session {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("delegate: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var out struct {
		sessions.Session
		SessionID    string `json:"sessionId"`
		WorktreePath string `json:"worktreePath"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("delegate --json: %v\n%s", err, r.stdout)
	}
	if out.SessionID != out.ID || out.WorktreePath != out.Worktree {
		t.Fatalf("delegate --json: %s", r.stdout)
	}
	return &out.Session
}

// TestDelegate: delegate adds the worktree and branch, starts the agent
// there and posts the prompt; --wait prints its answer, made in the
// worktree with the delegation's variables; status shows the commit it
// made; a second delegate with the same title gets a new branch; rm
// refuses the dirty worktree, then removes it with --force and keeps the
// branch; stop leaves the agent OFFLINE.
func TestDelegate(t *testing.T) {
	d := newDelegateEnv(t)
	t.Setenv("FAKE_CLI_COMMIT", "1")
	// As inside a watcher's run: its limits carry over.
	d.env["COLLAB_MAX_HOPS"], d.env["COLLAB_BUDGET_USD"] = "3", "1.5"
	r := d.delegate(t, "--title", "Fix the bug", "--wait", "--timeout", "2m", "please fix the bug")
	if r.code != 0 {
		t.Fatalf("delegate --wait: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	list, err := sessions.List(tree.Root(d.root))
	if err != nil || len(list) != 1 {
		t.Fatalf("sessions: %v, %v", list, err)
	}
	s := &list[0]
	wantPath := filepath.Join(d.wts, "repo", "fix-the-bug")
	if s.Branch != "fix-the-bug" || s.Worktree != wantPath || s.Agent != "human-"+s.ID || s.Channel != "delegate-"+s.ID ||
		s.Status != sessions.Running || s.Depth != 1 || s.Base != "main" {
		t.Fatalf("session %+v", s)
	}
	for _, want := range []string{"session " + s.ID, "in " + wantPath + " on fix-the-bug for human at depth 1 (cwd " + wantPath + ") hops 3 budget 1.5"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("delegate --wait output lacks %q:\n%s", want, r.stdout)
		}
	}
	if got := gittest.Git(t, d.repo, "branch", "--list", "fix-the-bug"); got == "" {
		t.Fatal("no branch fix-the-bug")
	}
	st := runCollab(t, d.env, "", "delegate", "status", "--json", s.ID)
	var status struct {
		State string `json:"state"`
		Git   struct {
			Ahead int      `json:"ahead"`
			Dirty []string `json:"dirty"`
		} `json:"git"`
		Last struct {
			From string `json:"from"`
		} `json:"last_message"`
		Jobs []struct{ Status string } `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &status); err != nil || st.code != 0 {
		t.Fatalf("status: %v %+v", err, st)
	}
	if status.Git.Ahead != 1 || len(status.Git.Dirty) != 0 || status.Last.From != s.Agent || len(status.Jobs) != 1 || !presence.IsAwake(status.State) {
		t.Fatalf("status %+v\n%s", status, st.stdout)
	}
	if r := runCollab(t, d.env, "", "delegate", "status", s.ID); !strings.Contains(r.stdout, "commits ahead of main: 1") {
		t.Errorf("status text:\n%s", r.stdout)
	}

	// The same title again: a new branch.
	t.Setenv("FAKE_CLI_COMMIT", "")
	s2 := sessionOf(t, d.delegate(t, "--title", "Fix the bug", "--json", "please fix the bug again"))
	if s2.Branch != "fix-the-bug-2" {
		t.Fatalf("second branch %q, want fix-the-bug-2", s2.Branch)
	}
	for _, cmd := range [][]string{{"delegate", "ls"}, {"ls"}, {"who"}} {
		if r := runCollab(t, d.env, "", cmd...); !strings.Contains(r.stdout, s.Agent) || !strings.Contains(r.stdout, s2.Agent) {
			t.Errorf("%v:\n%s", cmd, r.stdout)
		}
	}
	r = runCollab(t, d.env, "", "delegate", "send", s2.ID, "--agent", "human", "--wait", "--timeout", "1m", "and", "more")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ok ") {
		t.Fatalf("delegate send --wait: %+v", r)
	}

	// rm refuses a dirty worktree and leaves it running.
	if err := os.WriteFile(filepath.Join(s.Worktree, "scratch.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCollab(t, d.env, "", "delegate", "rm", s.ID)
	if r.code != exitRefused || !strings.Contains(r.stderr, "scratch.txt") {
		t.Fatalf("rm of a dirty worktree: %+v", r)
	}
	if _, err := os.Stat(s.Worktree); err != nil {
		t.Fatal(err)
	}
	if s := d.session(t, s.ID); s.Status != sessions.Running || !sessionAlive(s) {
		t.Fatalf("refused rm changed the session: %+v", s)
	}
	r = runCollab(t, d.env, "", "delegate", "rm", "--force", s.ID)
	if r.code != 0 {
		t.Fatalf("rm --force: %+v", r)
	}
	if _, err := os.Stat(s.Worktree); !os.IsNotExist(err) {
		t.Fatalf("worktree left after rm --force: %v", err)
	}
	if gittest.Git(t, d.repo, "branch", "--list", "fix-the-bug") == "" {
		t.Fatal("rm deleted the branch")
	}
	if got := d.session(t, s.ID); got.Status != sessions.Removed || proc.PIDAlive(s.PID) && !isZombie(s.PID) {
		t.Fatalf("after rm: %+v", got)
	}

	// stop: OFFLINE, no process.
	if r := runCollab(t, d.env, "", "delegate", "stop", s2.ID); r.code != 0 {
		t.Fatalf("stop: %+v", r)
	}
	if p, err := presence.Read(tree.Root(d.root), s2.Agent); err != nil || p.State != presence.StateOffline {
		t.Fatalf("presence after stop: %+v, %v", p, err)
	}
	waitFor(t, func() bool { return !proc.PIDAlive(s2.PID) || isZombie(s2.PID) })
	if got := d.session(t, s2.ID); got.Status != sessions.Stopped {
		t.Fatalf("after stop: %+v", got)
	}
	if _, err := os.Stat(s2.Worktree); err != nil {
		t.Fatalf("stop removed the worktree: %v", err)
	}
}

// TestDelegateLimits: a delegator at the depth limit, or with the
// concurrent sessions limit reached, is refused with exit 4 and nothing
// is made.
func TestDelegateLimits(t *testing.T) {
	d := newDelegateEnv(t)
	d.env["COLLAB_DELEGATION_DEPTH"] = "2"
	r := d.delegate(t, "work")
	if r.code != exitRefused || !strings.Contains(r.stderr, "delegation depth 2, the limit is 2") {
		t.Fatalf("at depth 2: %+v", r)
	}
	d.env["COLLAB_DELEGATION_DEPTH"] = "1"
	sessionOf(t, d.delegate(t, "--json", "--max-concurrent", "1", "work"))
	r = d.delegate(t, "--max-concurrent", "1", "more work")
	if r.code != exitRefused || !strings.Contains(r.stderr, "already has 1 active delegated sessions, the limit is 1") {
		t.Fatalf("over the concurrency limit: %+v", r)
	}
	if list, _ := sessions.List(tree.Root(d.root)); len(list) != 1 || list[0].Depth != 2 {
		t.Fatalf("sessions %+v, want the one at depth 2", list)
	}

	// A rival delegation that records itself between the check and the
	// record: service.TestDelegateConcurrencyRace.
}

// TestDelegateFailedLeavesNothing: a delegate whose agent cannot start
// (its CLI does not exist) leaves no worktree, branch, process or record.
func TestDelegateFailedLeavesNothing(t *testing.T) {
	d := newDelegateEnv(t)
	r := runCollabAs(t, "human", d.env, "", "delegate", "--repo", d.repo, "--cli", "command", "--cmd", "/nonexistent/cli",
		"--poll", "100ms", "--heartbeat", "1s", "--start-timeout", "1m", "--branch", "doomed", "work")
	if r.code == 0 {
		t.Fatalf("delegate with a missing CLI succeeded: %+v", r)
	}
	if !strings.Contains(r.stderr, "/nonexistent/cli") {
		t.Errorf("the error does not say why:\n%s", r.stderr)
	}
	if got := gittest.Git(t, d.repo, "branch", "--list", "doomed"); got != "" {
		t.Error("branch doomed left behind")
	}
	if got := gittest.Git(t, d.repo, "worktree", "list"); strings.Count(got, "\n") != 0 {
		t.Errorf("worktrees left:\n%s", got)
	}
	if ents, _ := os.ReadDir(filepath.Join(d.wts, "repo")); len(ents) != 0 {
		t.Errorf("worktree folder left: %v", ents)
	}
	if list, _ := sessions.List(tree.Root(d.root)); len(list) != 0 {
		t.Errorf("records left: %+v", list)
	}
}

// TestDelegateBranchClash: --branch naming an existing branch is refused
// without touching it; a made name steps around existing branches.
func TestDelegateBranchClash(t *testing.T) {
	d := newDelegateEnv(t)
	gittest.Git(t, d.repo, "branch", "taken")
	gittest.Git(t, d.repo, "branch", "add-tests")
	if r := d.delegate(t, "--branch", "taken", "work"); r.code != exitUsage || !strings.Contains(r.stderr, "taken exists") {
		t.Fatalf("--branch taken: %+v", r)
	}
	if r := d.delegate(t, "--branch", "bad..name", "work"); r.code != exitUsage {
		t.Fatalf("--branch bad..name: %+v", r)
	}
	// The delegator's key is its own: the new watcher does not take it.
	t.Setenv("COLLAB_KEY", filepath.Join(t.TempDir(), "delegators.key"))
	s := sessionOf(t, d.delegate(t, "--json", "Add tests!"))
	if s.Branch != "add-tests-2" {
		t.Fatalf("branch %q, want add-tests-2", s.Branch)
	}
}

// TestResume: a delegated agent whose watcher was killed is restarted by
// collab resume and answers again; one still running is left alone.
func TestResume(t *testing.T) {
	d := newDelegateEnv(t)
	s := sessionOf(t, d.delegate(t, "--json", "work"))
	if r := runCollab(t, d.env, "", "resume"); r.code != 0 || r.stdout != "" {
		t.Fatalf("resume with nothing to do: %+v", r)
	}
	syscall.Kill(-s.PID, syscall.SIGKILL)
	// Gone as resume judges it: no process of its group left with its
	// session's variable (the group's last member may outlive the leader).
	waitFor(t, func() bool { return !sessionAlive(s) })
	r := runCollab(t, d.env, "", "resume")
	if r.code != 0 || !strings.Contains(r.stdout, "session "+s.ID+": "+s.Agent+" restarted") {
		t.Fatalf("resume: %+v", r)
	}
	got := d.session(t, s.ID)
	if got.PID == s.PID || !sessionAlive(got) || got.Status != sessions.Running {
		t.Fatalf("after resume: %+v", got)
	}
	r = runCollab(t, d.env, "", "delegate", "send", s.ID, "--agent", "human", "--wait", "--timeout", "1m", "still there?")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ok ") {
		t.Fatalf("send after resume: %+v", r)
	}
}

// TestDelegateRealClaude: the delegated agent is the real claude CLI,
// against the fake model server.
func TestDelegateRealClaude(t *testing.T) {
	srv := fakemodel.Start(t)
	c := srv.CLI(t, fakemodel.ClaudeCode)
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	d := newDelegateEnv(t)
	srv.Always(fakemodel.Text("done in the worktree"))
	r := runCollabAs(t, "human", d.env, "", "delegate", "--repo", d.repo, "--cli", "claude", "--cmd", c.Path, "--model", c.Model,
		"--poll", "100ms", "--heartbeat", "1s", "--wait", "--timeout", "2m", "--title", "real", "please do it")
	if r.code != 0 || !strings.Contains(r.stdout, "done in the worktree") {
		t.Fatalf("delegate to claude: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(d.wts, "repo", "real")); err != nil {
		t.Fatal(err)
	}
}

// TestResumeWorkflow: a workflow instance started with start --background
// whose process was killed is restarted by collab resume, without a
// second kickoff, and answers again.
func TestResumeWorkflow(t *testing.T) {
	root, env := newWorkflowRoot(t)
	p := writeWorkflow(t, "name: quick\nagents:\n  a:\n    cli: command\n    cmd: "+strconv.Quote(os.Args[0])+"\nkickoff: \"@a hello\"\n")
	t.Setenv("COLLAB_TEST_AS", "collab")
	if r := runCollabAs(t, "human", env, "", startArgs("--background", "--root", root, "--instance", "r1", p)...); r.code != 0 {
		t.Fatalf("start --background: %+v", r)
	}
	rec := readRecord(t, root, "quick", "r1")
	t.Cleanup(func() {
		if rec := readRecord(t, root, "quick", "r1"); proc.PIDAlive(rec.PID) {
			proc.EndGroup(rec.PID, 0)
		}
	})
	syscall.Kill(-rec.PID, syscall.SIGKILL)
	// Gone, not a zombie (this process, its parent here, reaps it): the
	// restarted start takes a pid that answers kill 0 for a running one.
	waitFor(t, func() bool { return !proc.PIDAlive(rec.PID) })
	r := runCollab(t, env, "", "resume")
	if r.code != 0 || !strings.Contains(r.stdout, "quick@r1 restarted") {
		t.Fatalf("resume: %+v", r)
	}
	got := readRecord(t, root, "quick", "r1")
	if got.PID == rec.PID || got.Status != workflow.Running || !proc.PIDAlive(got.PID) {
		t.Fatalf("after resume: %+v", got)
	}
	r = runCollabAs(t, "human", env, "", "send", "--channel", got.Channel, "--to", "a@r1", "--wait", "--timeout", "1m", "again")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ok ") {
		t.Fatalf("send after resume: %+v", r)
	}
	msgs, _, _ := channel.ReadAll(tree.Root(root), got.Channel, channel.ReaderOptions{})
	kickoffs := 0
	for _, m := range msgs {
		if m.Content.Text == "@a hello" {
			kickoffs++
		}
	}
	if kickoffs != 1 {
		t.Errorf("%d kickoffs, want 1", kickoffs)
	}
	if r := runCollab(t, env, "", "stop", "--timeout", "30s", "quick@r1"); r.code != 0 {
		t.Fatalf("stop: %+v", r)
	}
}

// TestDelegateForeignRecord: stop, rm and resume act only on records this
// account owns: one rewritten by another account of the tree's group is
// refused, its worktree and process left alone.
func TestDelegateForeignRecord(t *testing.T) {
	d := newDelegateEnv(t)
	s := sessionOf(t, d.delegate(t, "--json", "work"))
	if err := os.Chown(recordPath(tree.Root(d.root), s.ID), 65534, 65534); err != nil {
		// Not root: the service's TestStopRefusals takes this account
		// for another one instead.
		t.Skipf("make the record another account's: %v", err)
	}
	for _, cmd := range []string{"stop", "rm"} {
		r := runCollab(t, d.env, "", "delegate", cmd, "--force", s.ID)
		if cmd == "stop" {
			r = runCollab(t, d.env, "", "delegate", cmd, s.ID)
		}
		if r.code != exitRefused || !strings.Contains(r.stderr, "not this account's") {
			t.Fatalf("%s of a foreign record: %+v", cmd, r)
		}
	}
	if _, err := os.Stat(s.Worktree); err != nil || !sessionAlive(s) {
		t.Fatalf("a refused command touched the session: %v", err)
	}
	syscall.Kill(-s.PID, syscall.SIGKILL)
	// Gone as resume judges it: no process of its group left with its
	// session's variable (the group's last member may outlive the leader).
	waitFor(t, func() bool { return !sessionAlive(s) })
	r := runCollab(t, d.env, "", "resume")
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "skipping session "+s.ID) {
		t.Fatalf("resume of a foreign record: %+v", r)
	}
}

// TestDelegateWaitRefused: a delegation from a run deep in a chain is one
// hop deeper; at the delegated watcher's --max-hops (carried over) it is
// refused with a notice, and delegate --wait ends with exit 4 at once.
func TestDelegateWaitRefused(t *testing.T) {
	d := newDelegateEnv(t)
	d.env["COLLAB_HOPS"], d.env["COLLAB_MAX_HOPS"] = "2", "3" // as inside a run answering a message of hops 2
	r := d.delegate(t, "--wait", "--timeout", "2m", "go deeper")
	if r.code != exitRefused || !strings.Contains(r.stderr, "no answer will come") {
		t.Fatalf("delegate --wait at the hop limit: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "session ") {
		t.Errorf("the session is not printed:\n%s", r.stdout)
	}
}

// TestDelegateNested: a delegated agent delegates in turn from its
// worktree (the new worktree goes beside it, based on its branch); the
// agent at the depth limit is refused, and the answers unwind to the
// person who asked.
func TestDelegateNested(t *testing.T) {
	d := newDelegateEnv(t)
	t.Setenv("COLLAB_WORKTREES", d.wts) // for the delegations made inside the runs
	t.Setenv("FAKE_CLI_NEST", "1")
	r := d.delegate(t, "--title", "outer", "--wait", "--timeout", "3m", "delegate this further")
	if r.code != 0 {
		t.Fatalf("delegate: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if want := "depth 1 got: depth 2 refused (exit 4): collab: delegate: delegation refused: "; !strings.Contains(r.stdout, want) ||
		!strings.Contains(r.stdout, "is at delegation depth 2, the limit is 2") {
		t.Fatalf("output lacks the refusal at depth 2:\n%s", r.stdout)
	}
	list, _ := sessions.List(tree.Root(d.root))
	if len(list) != 2 {
		t.Fatalf("sessions %+v, want 2", list)
	}
	outer, inner := list[0], list[1]
	if inner.DelegatedBy != outer.Agent || inner.Depth != 2 || inner.Base != outer.Branch || inner.Repo != outer.Repo ||
		inner.Worktree != filepath.Join(d.wts, "repo", "nested") || inner.Agent != "human-"+outer.ID+"-"+inner.ID {
		t.Fatalf("inner session %+v\nouter %+v", inner, outer)
	}
}

// TestDelegateStopMidRun: stop while the agent's CLI runs leaves no CLI
// behind, nor a tool the CLI started, even when the watcher is killed
// before its grace ends.
func TestDelegateStopMidRun(t *testing.T) {
	d := newDelegateEnv(t)
	pids := t.TempDir()
	t.Setenv("FAKE_CLI_SLEEP", "60s")
	t.Setenv("FAKE_CLI_STARTED", pids)
	t.Setenv("FAKE_CLI_SPAWN", "1")
	s := sessionOf(t, d.delegate(t, "--json", "take your time"))
	var tool int
	waitFor(t, func() bool {
		ents, _ := os.ReadDir(pids)
		for _, e := range ents {
			if n, ok := strings.CutPrefix(e.Name(), "child-"); ok {
				tool, _ = strconv.Atoi(n)
			}
		}
		return len(ents) == 2
	})
	t.Cleanup(func() { syscall.Kill(tool, syscall.SIGKILL) })
	if r := runCollab(t, d.env, "", "delegate", "stop", "--timeout", "1s", s.ID); r.code != 0 {
		t.Fatalf("stop: %+v", r)
	}
	waitFor(t, func() bool { return !proc.PIDAlive(s.PID) || isZombie(s.PID) })
	noCLILeft(t, pids)
	if proc.PIDAlive(tool) && !isZombie(tool) {
		t.Errorf("the CLI's tool %d is still alive", tool)
	}
	if got := d.session(t, s.ID); got.Status != sessions.Stopped {
		t.Fatalf("after stop: %+v", got)
	}
}
