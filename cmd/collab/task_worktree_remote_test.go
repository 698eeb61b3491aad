package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/workspace/task"
)

// TestRemoteTaskWorktree: with --remote and no mount, claim --worktree
// claims through the bridge, adds the worktree in this host's repository
// and records it as rem's signed worktree event (task show on the mount
// gives the worktree, branch and host); claiming again reuses it; a task
// another agent holds is refused (exit 4) with no branch made; worktree
// reads the git state here; done --remove-worktree refuses uncommitted
// changes (exit 4, the task not finished) unless --force; a worktree on
// another host is named, and rm of it refused.
func TestRemoteTaskWorktree(t *testing.T) {
	s := newRemoteSetup(t)
	startBridge(t, s.root, s.url)
	repo := taskGitRepo(t)
	wts := filepath.Join(t.TempDir(), "wts")
	env := maps.Clone(s.env)
	env["COLLAB_WORKTREES"] = wts
	remote := func(args ...string) result {
		return runCollab(t, env, "", append(args, "--channel", "dev")...)
	}
	mounted := func(args ...string) result {
		return runCollab(t, s.mounted, "", append(args, "--agent", "m", "--channel", "dev")...)
	}
	for _, title := range []string{"Write the parser", "lex", "elsewhere", "kept"} {
		if r := mounted("task", "add", title); r.code != 0 {
			t.Fatalf("task add: %+v", r)
		}
	}
	host, _ := os.Hostname()
	path := filepath.Join(wts, "proj", "t1-write-the-parser")
	r := remote("task", "claim", "t1", "--worktree", "--repo", repo)
	if r.code != 0 || r.stdout != "t1 claimed by rem\nworktree "+path+" (branch t1-write-the-parser)\n" {
		t.Fatalf("claim --worktree --remote: %+v", r)
	}
	if got := gitOut(t, path, "symbolic-ref", "--short", "HEAD"); got != "t1-write-the-parser" {
		t.Errorf("branch checked out in %s: %q", path, got)
	}
	r = mounted("task", "show", "t1")
	if r.code != 0 || !strings.Contains(r.stdout, "worktree: "+path+" (branch t1-write-the-parser, host "+host+")") {
		t.Fatalf("task show on the mount: %+v", r)
	}
	r = mounted("task", "show", "t1", "--json")
	var shown struct {
		task.Task
		History []struct {
			Agent, Event, Verdict string
		} `json:"history"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || len(shown.History) != 2 {
		t.Fatalf("task show --json on the mount: %+v %v", r, err)
	}
	if h := shown.History[1]; h.Event != task.EvWorktree || h.Agent != "rem" || h.Verdict != "verified" {
		t.Errorf("the worktree event on the mount: %+v, want rem's, verified", h)
	}
	r = remote("task", "claim", "t1", "--worktree", "--repo", repo, "--json")
	var tk task.Task
	if err := json.Unmarshal([]byte(r.stdout), &tk); err != nil || tk.Worktree != path || tk.Branch != "t1-write-the-parser" || tk.Events != 2 {
		t.Fatalf("claim again --remote: %+v (%v), want the same worktree, no new event", r, err)
	}
	if r := mounted("task", "claim", "t2"); r.code != 0 {
		t.Fatalf("claim t2 on the mount: %+v", r)
	}
	if r := remote("task", "claim", "t2", "--worktree", "--repo", repo); r.code != exitRefused || !strings.Contains(r.stderr, "claimed by m") {
		t.Errorf("claim --worktree --remote of m's task: %+v, want exit 4", r)
	}
	if got := gitOut(t, repo, "branch", "--list", "t2-*"); got != "" {
		t.Errorf("branches after a refused claim: %q", got)
	}

	if r := remote("task", "worktree", "t1"); r.code != 0 || !strings.Contains(r.stdout, "clean") {
		t.Errorf("worktree --remote: %+v", r)
	}
	if err := os.WriteFile(filepath.Join(path, "wip.go"), []byte("package wip\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := remote("task", "worktree", "t1"); r.code != 0 || !strings.Contains(r.stdout, "uncommitted: ?? wip.go") {
		t.Errorf("worktree --remote, dirty: %+v", r)
	}
	r = remote("task", "done", "t1", "--remove-worktree", "merged")
	if r.code != exitRefused || !strings.Contains(r.stderr, "uncommitted changes (?? wip.go)") || !strings.Contains(r.stderr, "not finished") {
		t.Fatalf("done --remove-worktree --remote, dirty: %+v, want exit 4", r)
	}
	if r := mounted("task", "show", "t1", "--json"); !strings.Contains(r.stdout, `"status": "claimed"`) {
		t.Fatalf("t1 after a refused done: %s", r.stdout)
	}
	if r := remote("task", "worktree", "rm", "t1"); r.code != exitRefused {
		t.Errorf("worktree rm --remote, dirty: %+v, want exit 4", r)
	}
	r = remote("task", "done", "t1", "--remove-worktree", "--force", "merged")
	if r.code != 0 || !strings.Contains(r.stdout, "t1 done") || !strings.Contains(r.stderr, "removed worktree") {
		t.Fatalf("done --remove-worktree --force --remote: %+v", r)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
	if got := gitOut(t, repo, "branch", "--list", "t1-write-the-parser"); got == "" {
		t.Error("done --remove-worktree deleted the branch")
	}
	if r := mounted("task", "show", "t1", "--json"); !strings.Contains(r.stdout, `"status": "done"`) {
		t.Errorf("t1 on the mount: %s", r.stdout)
	}

	// done without --remove-worktree and no terminal keeps it and says
	// how to remove it from here.
	if r := remote("task", "claim", "t4", "--worktree", "--repo", repo); r.code != 0 {
		t.Fatalf("claim t4 --worktree --remote: %+v", r)
	}
	r = remote("task", "done", "t4", "kept")
	if r.code != 0 || !strings.Contains(r.stderr, "kept; remove it with: collab task worktree rm t4 --channel dev --remote") {
		t.Errorf("done --remote without a terminal: %+v", r)
	}
	if r := remote("task", "worktree", "rm", "t4"); r.code != 0 || !strings.Contains(r.stderr, "removed worktree") {
		t.Errorf("worktree rm --remote: %+v", r)
	}

	// A worktree recorded by another host is named, not read or removed.
	b, err := task.New(s.root, "dev")
	if err != nil {
		t.Fatal(err)
	}
	b.Host = "elsewhere"
	if _, err := b.Claim("t3", "rem2"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RecordWorktree("t3", "rem2", "/srv/proj/t3-elsewhere", "t3-elsewhere"); err != nil {
		t.Fatal(err)
	}
	if r := remote("task", "worktree", "t3"); r.code != 0 || !strings.Contains(r.stdout, "on host elsewhere") {
		t.Errorf("worktree --remote of another host's: %+v", r)
	}
	if r := remote("task", "worktree", "rm", "t3"); r.code != exitRefused || !strings.Contains(r.stderr, "on host elsewhere; run this there") {
		t.Errorf("worktree rm --remote of another host's: %+v, want exit 4", r)
	}
	s.noRootTouched(t)
}
