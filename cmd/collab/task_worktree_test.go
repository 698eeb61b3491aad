package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/workspace/task"
)

// taskGitRepo makes a git repository with one commit in a temporary
// folder and returns its path.
func taskGitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := filepath.Join(t.TempDir(), "proj")
	for _, args := range [][]string{
		{"init", "--quiet", "--initial-branch=main", repo},
		{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "--allow-empty", "-m", "init"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestTaskClaimWorktree: claim --worktree makes a worktree on a new branch
// named from the task, records it on the task (show, --json) and reuses it
// on a second claim; a second task with the same title gets another
// branch; done without a terminal keeps it and prints the command;
// worktree rm removes it and keeps the branch.
func TestTaskClaimWorktree(t *testing.T) {
	repo := taskGitRepo(t)
	wts := filepath.Join(t.TempDir(), "wts")
	env := map[string]string{"COLLAB_ROOT": newTree(t), "COLLAB_CHANNEL": "dev", "COLLAB_WORKTREES": wts}
	for range 2 {
		if r := runCollab(t, env, "", "task", "add", "--agent", "lead", "Write the parser!"); r.code != 0 {
			t.Fatalf("add: %+v", r)
		}
	}
	if r := runCollab(t, env, "", "task", "claim", "t1", "--agent", "codex", "--repo", t.TempDir(), "--worktree"); r.code != 1 || !strings.Contains(r.stderr, "not in a git repository") {
		t.Fatalf("claim --worktree outside a repository: %+v", r)
	}
	if r := runCollab(t, env, "", "task", "list"); !strings.Contains(r.stdout, "t1  ready") {
		t.Fatalf("t1 after a refused claim: %q, want ready", r.stdout)
	}
	r := runCollab(t, env, "", "task", "claim", "t1", "--agent", "codex", "--repo", repo, "--worktree")
	path := filepath.Join(wts, "proj", "t1-write-the-parser")
	if r.code != 0 || r.stdout != "t1 claimed by codex\nworktree "+path+" (branch t1-write-the-parser)\n" {
		t.Fatalf("claim --worktree: %+v", r)
	}
	if got := gitOut(t, path, "symbolic-ref", "--short", "HEAD"); got != "t1-write-the-parser" {
		t.Errorf("branch checked out in %s: %q", path, got)
	}
	r = runCollab(t, env, "", "task", "claim", "t1", "--agent", "codex", "--repo", repo, "--worktree", "--json")
	var tk task.Task
	if err := json.Unmarshal([]byte(r.stdout), &tk); err != nil || tk.Worktree != path || tk.Branch != "t1-write-the-parser" || tk.Events != 2 {
		t.Fatalf("claim again: %+v (%v), want the same worktree, no new event", tk, err)
	}
	if r := runCollab(t, env, "", "task", "claim", "t1", "--agent", "gemini", "--repo", repo, "--worktree"); r.code != 4 {
		t.Errorf("claim --worktree of codex's task: %+v, want exit 4", r)
	}
	if got := gitOut(t, repo, "branch", "--list", "--format=%(refname:short)", "t1-*"); got != "t1-write-the-parser" {
		t.Errorf("branches after a refused claim: %q", got)
	}
	// The second task's name clashes on the slug, not on the id; a branch
	// made by hand with its name makes it take -2.
	gitOut(t, repo, "branch", "t2-write-the-parser")
	r = runCollab(t, env, "", "task", "claim", "t2", "--agent", "gemini", "--repo", repo, "--worktree")
	if r.code != 0 || !strings.Contains(r.stdout, "(branch t2-write-the-parser-2)") {
		t.Fatalf("claim t2: %+v", r)
	}
	r = runCollab(t, env, "", "task", "show", "t1")
	if !strings.Contains(r.stdout, "worktree   codex") || !strings.Contains(r.stdout, "worktree: "+path+" (branch t1-write-the-parser, host ") {
		t.Errorf("show: %q, want the worktree event", r.stdout)
	}

	r = runCollab(t, env, "", "task", "done", "t1", "--agent", "codex", "merged")
	if r.code != 0 || !strings.Contains(r.stderr, "kept; remove it with: collab task worktree rm t1 --channel dev") {
		t.Fatalf("done without a terminal: %+v", r)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("done removed the worktree: %v", err)
	}
	r = runCollab(t, env, "", "task", "worktree", "t1")
	if r.code != 0 || !strings.Contains(r.stdout, "clean") {
		t.Errorf("worktree: %+v", r)
	}
	r = runCollab(t, env, "", "task", "worktree", "rm", "t1")
	if r.code != 0 || !strings.Contains(r.stderr, "removed worktree") {
		t.Fatalf("worktree rm: %+v", r)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
	if got := gitOut(t, repo, "branch", "--list", "t1-write-the-parser"); got == "" {
		t.Error("worktree rm deleted the branch")
	}
	if r := runCollab(t, env, "", "task", "worktree", "--force", "t1"); r.code != 2 {
		t.Errorf("worktree --force without rm: %+v, want exit 2", r)
	}
	if r := runCollab(t, env, "", "task", "claim", "t2", "--agent", "gemini", "--repo", repo); r.code != 2 {
		t.Errorf("--repo without --worktree: %+v, want exit 2", r)
	}
}

// TestTaskDoneDirtyWorktree: done --remove-worktree refuses a worktree
// with uncommitted changes (exit 4, the task still claimed) unless
// --force; on a terminal, done does not offer to remove a dirty one, and
// removes a clean one when told yes.
func TestTaskDoneDirtyWorktree(t *testing.T) {
	repo := taskGitRepo(t)
	env := map[string]string{"COLLAB_ROOT": newTree(t), "COLLAB_CHANNEL": "dev", "COLLAB_WORKTREES": filepath.Join(t.TempDir(), "wts")}
	for _, title := range []string{"dirty one", "clean one"} {
		runCollab(t, env, "", "task", "add", "--agent", "lead", title)
	}
	var paths []string
	for _, id := range []string{"t1", "t2"} {
		r := runCollab(t, env, "", "task", "claim", id, "--agent", "codex", "--repo", repo, "--worktree", "--json")
		var tk task.Task
		if err := json.Unmarshal([]byte(r.stdout), &tk); err != nil || tk.Worktree == "" {
			t.Fatalf("claim %s: %+v", id, r)
		}
		paths = append(paths, tk.Worktree)
	}
	if err := os.WriteFile(filepath.Join(paths[0], "wip.go"), []byte("package wip\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCollab(t, env, "", "task", "done", "t1", "--agent", "codex", "--remove-worktree", "merged")
	if r.code != 4 || !strings.Contains(r.stderr, "uncommitted changes (?? wip.go)") || !strings.Contains(r.stderr, "not finished") {
		t.Fatalf("done --remove-worktree on a dirty worktree: %+v, want exit 4", r)
	}
	if r := runCollab(t, env, "", "task", "worktree", "rm", "t1"); r.code != 4 {
		t.Fatalf("worktree rm on a dirty worktree: %+v, want exit 4", r)
	}
	tty := withTerminal(context.Background(), true)
	r = runCollabCtx(t, tty, env, "y\n", "task", "done", "t1", "--agent", "codex", "merged")
	if r.code != 0 || !strings.Contains(r.stderr, "1 uncommitted changes") || strings.Contains(r.stderr, "Remove worktree") {
		t.Fatalf("done on a terminal with a dirty worktree: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(paths[0], "wip.go")); err != nil {
		t.Fatalf("the uncommitted file is gone: %v", err)
	}
	r = runCollab(t, env, "", "task", "worktree", "rm", "t1", "--force")
	if r.code != 0 {
		t.Fatalf("worktree rm --force: %+v", r)
	}
	r = runCollabCtx(t, tty, env, "y\n", "task", "done", "t2", "--agent", "codex", "merged")
	if r.code != 0 || !strings.Contains(r.stderr, "Remove worktree") || !strings.Contains(r.stderr, "removed worktree") {
		t.Fatalf("done on a terminal, yes: %+v", r)
	}
	if _, err := os.Stat(paths[1]); !os.IsNotExist(err) {
		t.Errorf("clean worktree still there after yes: %v", err)
	}
}
