package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/testsupport/gittest"
)

// TestTaskWorktreeRules: a claim with a worktree makes and records one
// (reused when claimed again), another agent's claim is Conflict, a
// worktree with uncommitted changes is not removed (Conflict) unless
// forced, and a task without one is NotFound.
func TestTaskWorktreeRules(t *testing.T) {
	repo := gittest.Repo(t)
	m, _ := testMount(t)
	ctx := context.Background()
	q := TaskQuery{Channel: "dev"}
	coder := Actor{Name: "coder@i1"}
	for _, title := range []string{"Write the parser!", "other"} {
		if _, err := m.AddTask(ctx, Actor{Name: "lead"}, q, NewTask{Title: title}); err != nil {
			t.Fatal(err)
		}
	}
	w := WorktreeRequest{Repo: repo, Dir: t.TempDir()}
	got, err := ClaimWorktree(ctx, m, coder, q, "t1", w)
	if err != nil || got.Branch != "t1-write-the-parser" || !WorktreeHere(got, m.TaskHost()) {
		t.Fatalf("ClaimWorktree = %+v, %v", got, err)
	}
	if again, err := ClaimWorktree(ctx, m, coder, q, "t1", w); err != nil || again.Worktree != got.Worktree {
		t.Errorf("claimed again: %+v, %v; want the same worktree", again, err)
	}
	if _, err := ClaimWorktree(ctx, m, Actor{Name: "codex"}, q, "t1", w); !errkind.Is(err, errkind.Conflict) {
		t.Errorf("another agent's claim: %v, want Conflict", err)
	}
	if _, _, err := TaskWorktree(ctx, m, q, "t2"); !errkind.Is(err, errkind.NotFound) {
		t.Errorf("a task without a worktree: %v, want NotFound", err)
	}
	if err := os.WriteFile(filepath.Join(got.Worktree, "wip.go"), []byte("package wip\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, st, err := TaskWorktree(ctx, m, q, "t1"); err != nil || !st.Exists || len(st.Dirty) != 1 {
		t.Errorf("TaskWorktree = %+v, %v; want one uncommitted change", st, err)
	}
	if err := CheckRemove(ctx, m, coder, q, "t1", false); !errkind.Is(err, errkind.Conflict) {
		t.Errorf("CheckRemove of a dirty worktree: %v, want Conflict", err)
	}
	if err := RemoveWorktree(ctx, got, false); !errkind.Is(err, errkind.Conflict) {
		t.Errorf("RemoveWorktree of a dirty worktree: %v, want Conflict", err)
	}
	if err := CheckRemove(ctx, m, coder, q, "t1", true); err != nil {
		t.Errorf("CheckRemove --force: %v", err)
	}
	if err := RemoveWorktree(ctx, got, true); err != nil || WorktreeHere(got, m.TaskHost()) {
		t.Errorf("RemoveWorktree --force: %v", err)
	}
}
