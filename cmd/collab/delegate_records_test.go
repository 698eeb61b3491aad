package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/accounts"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// The two-account tests of delegation and workflow records: what collab
// resume, delegate stop and rm act on must be a record no other account
// of the tree's group could have written.

// asDetached makes the test binary collab, and keeps it collab for the
// processes it starts detached (the watchers of delegate, start
// --background and resume), which TestMain's "collab" would make the fake
// CLI: these tests run those commands as other accounts, in processes of
// their own. Their model CLI is fakeCLIScript.
const asDetached = "collab-detached"

func init() {
	if os.Getenv("COLLAB_TEST_AS") == asDetached {
		main()
	}
}

// recordsTree is a tree made the multi-account way of docs/getting-started.md (the admin's,
// collab init --group) and the test binary where every account runs it
// as collab.
type recordsTree struct {
	s    *accounts.Set
	exe  string
	cli  string // the fake model CLI: the test binary as "cli"
	root string
	env  []string // the variables that make the test binary collab
}

func newRecordsTree(t *testing.T) *recordsTree {
	t.Helper()
	s := accounts.Require(t)
	g := &recordsTree{s: s, exe: s.Executable(t, os.Args[0]), root: s.Folder(t, s.Admin, "tree"),
		env: []string{"COLLAB_TEST_AS=" + asDetached}}
	g.cli = filepath.Join(s.Dir, "fake-cli")
	script := "#!/bin/sh\nCOLLAB_TEST_AS=cli exec '" + g.exe + "' \"$@\"\n"
	if err := os.WriteFile(g.cli, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	s.Admin.Run(t, g.env, g.exe, "init", "--root", g.root, "--group", strconv.Itoa(accounts.Group))
	return g
}

// collab runs collab as a and returns its output and exit code.
func (g *recordsTree) collab(a accounts.Account, args ...string) (stdout, stderr string, code int) {
	out, errOut, err := a.Try(g.env, g.exe, append(slices.Clip(args), "--root", g.root)...)
	return out, errOut, accounts.ExitCode(err)
}

// rewrite is Mallory writing text over the file at path, in place (the
// file keeps its owner): the error when it cannot.
func (g *recordsTree) rewrite(path, text string) error {
	_, _, err := g.s.Mallory.Try(nil, "/bin/sh", "-c", `printf '%s' "$1" > "$0"`, path, text)
	return err
}

// assertUnwritable checks that a record, as its owner wrote it, is not
// writable by the group or others, and that Mallory, a member of the
// tree's group, cannot rewrite it in place.
func (g *recordsTree) assertUnwritable(t *testing.T, path, evil string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		t.Errorf("%s: mode %v under umask 002: writable by others", path, fi.Mode().Perm())
	}
	if err := g.rewrite(path, evil); err == nil {
		t.Fatalf("%s (mode %v): Mallory rewrote another account's record in place", path, fi.Mode().Perm())
	}
}

// assertRefused checks that a command refused a record writable by others
// with the clear error: the file, its owner and mode, and the fix.
func assertRefused(t *testing.T, what, stderr string, code, want int, path string) {
	t.Helper()
	if code != want || !strings.Contains(stderr, path) || !strings.Contains(stderr, "-rw-rw-r--") ||
		!strings.Contains(stderr, "chmod go-w "+path) || !strings.Contains(stderr, "owner uid") {
		t.Fatalf("%s of a group-writable record: exit %d (want %d), stderr:\n%s", what, code, want, stderr)
	}
}

// agentRepo makes a git repository with one commit in Agent's home, as
// Agent.
func (g *recordsTree) agentRepo(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(g.s.Agent.Home, "repo")
	env := []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=Agent",
		"GIT_AUTHOR_EMAIL=agent@example.com", "GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.com"}
	g.s.Agent.Run(t, env, "git", "init", "--quiet", "--initial-branch=main", repo)
	g.s.Agent.Run(t, env, "git", "-C", repo, "commit", "--quiet", "--allow-empty", "-m", "first")
	return repo
}

// endGroup ends the process group of pid (a detached collab of another
// account, whose parent has exited) and waits until it is gone: reaped,
// not a zombie, which start's own check would take for a live instance.
func endGroup(t *testing.T, pid int) {
	t.Helper()
	proc.EndGroup(pid, 0)
	waitFor(t, func() bool { return !proc.PIDAlive(pid) })
}

// TestDelegationRecordOfAnotherAccount: a delegation record is written so
// that Mallory, another member of the tree's group, cannot rewrite it in
// place (under umask 002 it was 0664: Mallory's env or args, LD_PRELOAD or
// another --cmd, would run as Agent at the next resume); and a record of
// Agent's that others can write is refused by delegate stop, rm and
// resume with an error that names it and says how to fix it, its process
// and worktree left alone; fixed as it says, resume restarts it.
func TestDelegationRecordOfAnotherAccount(t *testing.T) {
	g := newRecordsTree(t)
	repo := g.agentRepo(t)
	out, errOut, code := g.collab(g.s.Agent, "delegate", "--agent", "agent", "--repo", repo,
		"--worktrees", filepath.Join(g.s.Agent.Home, "wts"), "--cli", "command", "--cmd", g.cli,
		"--poll", "100ms", "--heartbeat", "1s", "--json", "work")
	if code != 0 {
		t.Fatalf("delegate as agent: exit %d\n%s", code, errOut)
	}
	var s sessions.Session
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.PID == 0 {
		t.Fatalf("delegate --json: %v\n%s", err, out)
	}
	t.Cleanup(func() { proc.EndGroup(s.PID, 0) })
	rec := sessions.Path(tree.Root(g.root), s.ID)

	g.assertUnwritable(t, rec, `{"id":"`+s.ID+`","status":"running","args":["watch","--cmd","/tmp/evil"],"env":["LD_PRELOAD=/tmp/evil.so"]}`)

	// Agent's own record made group-writable (a record from before the
	// fix, or a chmod by mistake): its contents are not Agent's word.
	g.s.Agent.Run(t, nil, "chmod", "g+w", rec)
	for _, cmd := range [][]string{{"delegate", "stop", s.ID}, {"delegate", "rm", "--force", s.ID}} {
		_, errOut, code := g.collab(g.s.Agent, cmd...)
		assertRefused(t, strings.Join(cmd[:2], " "), errOut, code, exitRefused, rec)
	}
	if _, err := os.Stat(s.Worktree); err != nil || !sessionAlive(&s) {
		t.Fatalf("a refused stop or rm touched the session: %v", err)
	}
	endGroup(t, s.PID)
	_, errOut, code = g.collab(g.s.Agent, "resume")
	assertRefused(t, "resume", errOut, code, 1, rec)
	if got, err := sessions.Read(tree.Root(g.root), s.ID); err != nil || got.PID != s.PID {
		t.Fatalf("a refused resume restarted the session: %+v, %v", got, err)
	}

	// Fixed as the error says, it is Agent's again.
	g.s.Agent.Run(t, nil, "chmod", "go-w", rec)
	out, errOut, code = g.collab(g.s.Agent, "resume")
	if code != 0 || !strings.Contains(out, "session "+s.ID+": "+s.Agent+" restarted") {
		t.Fatalf("resume after chmod go-w: exit %d\n%s%s", code, out, errOut)
	}
	got, err := sessions.Read(tree.Root(g.root), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.EndGroup(got.PID, 0) })
	if _, errOut, code := g.collab(g.s.Agent, "delegate", "rm", "--force", s.ID); code != 0 {
		t.Fatalf("rm of the fixed record: exit %d\n%s", code, errOut)
	}
}

// TestWorkflowRecordOfAnotherAccount: the same for the record of a
// workflow instance started with start --background, whose args and
// folder collab resume runs again.
func TestWorkflowRecordOfAnotherAccount(t *testing.T) {
	g := newRecordsTree(t)
	r := g.startQuick(t, g.quickWorkflow(t, 0o644), "r1")
	root := tree.Root(g.root)
	rec := filepath.Join(root.Workflows(), workflow.RecordName("quick", "r1"))

	g.assertUnwritable(t, rec, `{"name":"quick","instance":"r1","status":"running","args":["/tmp/evil.yaml"],"dir":"/tmp"}`)

	g.s.Agent.Run(t, nil, "chmod", "g+w", rec)
	endGroup(t, r.PID)
	_, errOut, code := g.collab(g.s.Agent, "resume")
	assertRefused(t, "resume", errOut, code, 1, rec)
	if got, err := workflow.ReadRecord(root, "quick", "r1"); err != nil || got.PID != r.PID {
		t.Fatalf("a refused resume restarted the instance: %+v, %v", got, err)
	}

	g.s.Agent.Run(t, nil, "chmod", "go-w", rec)
	out, errOut, code := g.collab(g.s.Agent, "resume")
	if code != 0 || !strings.Contains(out, "quick@r1 restarted") {
		t.Fatalf("resume after chmod go-w: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := g.collab(g.s.Agent, "stop", "--timeout", "30s", "quick@r1"); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, errOut)
	}
}

// TestResumeRefusesForeignVariables: a session record of this account
// that sets for its watcher a variable collab delegate never sets (a
// loader variable) or another agent's key is not resumed.
func TestResumeRefusesForeignVariables(t *testing.T) {
	d := newDelegateEnv(t)
	s := sessionOf(t, d.delegate(t, "--json", "work"))
	endGroup(t, s.PID)
	root := tree.Root(d.root)
	env := d.session(t, s.ID).Env
	for _, tc := range []struct {
		name, env, want string
	}{
		{"loader variable", "LD_PRELOAD=/tmp/evil.so", "sets LD_PRELOAD"},
		{"another key", envKey + "=" + filepath.Join(filepath.Dir(s.Key), "human.key"), "not " + s.Agent + "'s own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := d.session(t, s.ID)
			got.Env = append(slices.Clip(env), tc.env)
			if err := sessions.Update(root, got); err != nil {
				t.Fatal(err)
			}
			r := runCollab(t, d.env, "", "resume")
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("resume: %+v", r)
			}
			if after := d.session(t, s.ID); after.PID != s.PID {
				t.Fatalf("resume started the session: pid %d", after.PID)
			}
		})
	}
}

// quickWorkflow writes a one-agent workflow file in Agent's home, owned by
// Agent with mode perm.
func (g *recordsTree) quickWorkflow(t *testing.T, perm os.FileMode) string {
	t.Helper()
	file := filepath.Join(g.s.Agent.Home, "quick.yaml")
	if err := os.WriteFile(file, []byte("name: quick\nagents:\n  a:\n    cli: command\n    cmd: "+strconv.Quote(g.cli)+"\nkickoff: \"@a hello\"\n"), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(file, g.s.Agent.UID, g.s.Agent.UID); err != nil {
		t.Fatal(err)
	}
	return file
}

// startQuick starts the workflow file as Agent in the background as
// instance, and returns its record; the instance is ended when t ends.
func (g *recordsTree) startQuick(t *testing.T, file, instance string) workflow.Record {
	t.Helper()
	if _, errOut, code := g.collab(g.s.Agent, append(startArgs("--background", "--agent", "agent", "--instance", instance), file)...); code != 0 {
		t.Fatalf("start --background as agent: exit %d\n%s", code, errOut)
	}
	root := tree.Root(g.root)
	r, err := workflow.ReadRecord(root, "quick", instance)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r, err := workflow.ReadRecord(root, "quick", instance); err == nil && r.PID > 0 {
			proc.EndGroup(r.PID, 0)
		}
	})
	return r
}

// TestResumeRefusesAWorkflowFileOthersCanWrite: resume runs a workflow
// file unattended, as the account that started it; one that another
// account could have changed since (writable by the group, as umask 002
// makes it) is refused, named, with the fix, and not run.
func TestResumeRefusesAWorkflowFileOthersCanWrite(t *testing.T) {
	g := newRecordsTree(t)
	file := g.quickWorkflow(t, 0o664)
	r := g.startQuick(t, file, "w1")
	root := tree.Root(g.root)
	endGroup(t, r.PID)
	_, errOut, code := g.collab(g.s.Agent, "resume")
	if code != 1 || !strings.Contains(errOut, file) || !strings.Contains(errOut, "chmod go-w") {
		t.Fatalf("resume of a group-writable workflow file: exit %d, stderr:\n%s", code, errOut)
	}
	if got, err := workflow.ReadRecord(root, "quick", "w1"); err != nil || got.PID != r.PID {
		t.Fatalf("a refused resume restarted the instance: %+v, %v", got, err)
	}
	g.s.Agent.Run(t, nil, "chmod", "go-w", file)
	out, errOut, code := g.collab(g.s.Agent, "resume")
	if code != 0 || !strings.Contains(out, "quick@w1 restarted") {
		t.Fatalf("resume after chmod go-w: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := g.collab(g.s.Agent, "stop", "--timeout", "30s", "quick@w1"); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, errOut)
	}
}

// TestWorkflowStopAcrossAccounts: only the account that runs an
// instance, root or the tree's owner may stop it. Another member of the
// group is refused by collab stop (exit 4, nothing written), and a stop
// file it writes itself, under the shared name or its own, neither stops
// the instance nor keeps a later run of the instance name from starting;
// the instance's own account stops it.
func TestWorkflowStopAcrossAccounts(t *testing.T) {
	g := newRecordsTree(t)
	file := g.quickWorkflow(t, 0o644)
	root := tree.Root(g.root)
	fi, err := os.Stat(root.Workflows())
	if err != nil || fi.Mode()&os.ModeSticky == 0 {
		t.Fatalf("workflows folder after init --group: %v, %v; want sticky", fi.Mode(), err)
	}
	// Left before the run by Mallory: the shared name and her own.
	for _, name := range []string{workflow.StopName("quick", "s1"), workflow.StopNameBy("quick", "s1", g.s.Mallory.UID)} {
		g.s.Mallory.Run(t, nil, "/bin/sh", "-c", `printf '{}' > "$0"`, filepath.Join(root.Workflows(), name))
	}
	r := g.startQuick(t, file, "s1")
	// The run reports the one under the shared name, and runs on.
	log := filepath.Join(root.Logs(), "quick"+workflow.Sep+"s1.log")
	waitFor(t, func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "ignoring a stop request")
	})
	if _, errOut, code := g.collab(g.s.Mallory, "stop", "--timeout", "5s", "quick@s1"); code != 4 || !strings.Contains(errOut, "may stop it") {
		t.Fatalf("stop as another member: exit %d, stderr:\n%s", code, errOut)
	}
	if got, err := workflow.ReadRecord(root, "quick", "s1"); err != nil || got.Status != workflow.Running || !proc.PIDAlive(r.PID) {
		t.Fatalf("another member stopped the instance: %+v, %v", got, err)
	}
	if _, errOut, code := g.collab(g.s.Agent, "stop", "--timeout", "30s", "quick@s1"); code != 0 {
		t.Fatalf("stop as the instance's account: exit %d\n%s", code, errOut)
	}
}
