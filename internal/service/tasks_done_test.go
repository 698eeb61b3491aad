package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/testsupport/gittest"
	"github.com/collabdev/collab/internal/workspace/task"
)

// TestFinishWorktree: what becomes of a finished task's worktree (the
// decisions collab task done made in cmd before): kept when there is no
// one to ask, kept with its uncommitted changes counted, kept when the
// answer is no, removed when it is yes or with Remove; a Remove of a
// dirty worktree refuses to finish the task (Conflict) unless Force; a
// worktree recorded on another host is left there, and worktree rm of it
// is Conflict.
func TestFinishWorktree(t *testing.T) {
	repo := gittest.Repo(t)
	m, _ := testMount(t)
	ctx := context.Background()
	q := TaskQuery{Channel: "dev"}
	coder := Actor{Name: "coder"}
	w := WorktreeRequest{Repo: repo, Dir: t.TempDir()}
	claim := func(title string) task.Task {
		t.Helper()
		added, err := m.AddTask(ctx, Actor{Name: "lead"}, q, NewTask{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		got, err := ClaimWorktree(ctx, m, coder, q, added.ID, w)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	finish := func(c task.Task, d DoneWorktree) (WorktreeFate, int, error) {
		t.Helper()
		done, err := FinishTask(ctx, m, coder, q, c.ID, TaskReport{Text: "ok"}, d)
		if err != nil {
			return WorktreeNone, 0, err
		}
		return FinishWorktree(ctx, m, done, d)
	}
	yes := func(task.Task) bool { return true }
	no := func(task.Task) bool { return false }

	if fate, _, err := finish(claim("kept"), DoneWorktree{}); err != nil || fate != WorktreeKept {
		t.Errorf("nobody to ask: %v, %v; want kept", fate, err)
	}
	if fate, _, err := finish(claim("declined"), DoneWorktree{Ask: no}); err != nil || fate != WorktreeDeclined {
		t.Errorf("answered no: %v, %v; want declined", fate, err)
	}
	c := claim("asked")
	if fate, _, err := finish(c, DoneWorktree{Ask: yes}); err != nil || fate != WorktreeRemoved {
		t.Errorf("answered yes: %v, %v; want removed", fate, err)
	}
	if _, err := os.Stat(c.Worktree); !os.IsNotExist(err) {
		t.Errorf("worktree %s still there: %v", c.Worktree, err)
	}
	dirty := claim("dirty")
	if err := os.WriteFile(filepath.Join(dirty.Worktree, "wip.go"), []byte("package wip\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := finish(dirty, DoneWorktree{Remove: true}); !errkind.Is(err, errkind.Conflict) {
		t.Errorf("remove a dirty worktree: %v, want Conflict", err)
	}
	if s, _ := m.Task(ctx, q, dirty.ID); s.Task.Status != task.Claimed {
		t.Errorf("refused removal finished the task: %s", s.Task.Status)
	}
	if fate, n, err := finish(dirty, DoneWorktree{Ask: yes}); err != nil || fate != WorktreeDirty || n != 1 {
		t.Errorf("dirty, asked: %v %d, %v; want dirty 1", fate, n, err)
	}
	if fate, _, err := FinishWorktree(ctx, m, dirty, DoneWorktree{Remove: true, Force: true}); err != nil || fate != WorktreeRemoved {
		t.Errorf("forced: %v, %v; want removed", fate, err)
	}
	if _, gone, err := RemoveTaskWorktree(ctx, m, q, dirty.ID, false); err != nil || !gone {
		t.Errorf("rm of a removed worktree: gone %v, %v", gone, err)
	}

	far := claim("far")
	far.WorktreeHost = "elsewhere"
	if fate, _, err := FinishWorktree(ctx, m, far, DoneWorktree{Remove: true}); err != nil || fate != WorktreeElsewhere {
		t.Errorf("on another host: %v, %v; want elsewhere", fate, err)
	}
	other := NewMount(Config{Root: m.cfg.Root, Host: "elsewhere"})
	if _, _, err := RemoveTaskWorktree(ctx, other, q, far.ID, false); !errkind.Is(err, errkind.Conflict) {
		t.Errorf("rm from another host: %v, want Conflict", err)
	}
}
