package service

import (
	"context"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/workspace/task"
)

// What becomes of a finished task's worktree: the door says how it was
// asked (--remove-worktree, --force, a question on a terminal), the layer
// decides and removes; the door prints the fate.

// WorktreeFate is what FinishWorktree did with a finished task's worktree.
type WorktreeFate int

const (
	WorktreeNone      WorktreeFate = iota // no worktree, or removed already
	WorktreeElsewhere                     // on another host: to be removed there
	WorktreeRemoved                       // removed (the branch stays)
	WorktreeKept                          // kept: nobody to ask
	WorktreeDirty                         // kept: it has uncommitted changes
	WorktreeDeclined                      // kept: the answer was no
)

// DoneWorktree is how a finished task's worktree is to be dealt with.
type DoneWorktree struct {
	Remove, Force bool
	// Ask, if set, asks whether to remove a clean worktree (nil: no one
	// to ask, the worktree is kept).
	Ask func(t task.Task) bool
}

// FinishTask finishes a's task id with r's outcome (r.Text) and its
// detail (r.Checkpoint.Detail): a Remove that could not be done
// (CheckRemove) refuses it before the task is finished.
func FinishTask(ctx context.Context, b Tasks, a Actor, q TaskQuery, id string, r TaskReport, w DoneWorktree) (task.Task, error) {
	if w.Remove {
		if err := CheckRemove(ctx, b, a, q, id, w.Force); err != nil {
			return task.Task{}, err
		}
	}
	r.Kind = task.EvDone
	return b.ReportTask(ctx, a, q, id, r)
}

// FinishWorktree deals with the worktree of finished task t: removes it
// with Remove; else asks, when it can, to remove it when it is clean;
// else keeps it. dirty is how many uncommitted changes kept it.
func FinishWorktree(ctx context.Context, b Tasks, t task.Task, w DoneWorktree) (fate WorktreeFate, dirty int, err error) {
	host := b.TaskHost()
	switch {
	case t.Worktree == "":
		return WorktreeNone, 0, nil
	case t.WorktreeHost != host:
		return WorktreeElsewhere, 0, nil
	case !WorktreeHere(t, host):
		return WorktreeNone, 0, nil
	case w.Remove:
		return WorktreeRemoved, 0, RemoveWorktree(ctx, t, w.Force)
	case w.Ask == nil:
		return WorktreeKept, 0, nil
	}
	st, err := CheckedWorktree(ctx, t)
	switch {
	case err != nil:
		return WorktreeKept, 0, err
	case len(st.Dirty) > 0:
		return WorktreeDirty, len(st.Dirty), nil
	case !w.Ask(t):
		return WorktreeDeclined, 0, nil
	}
	return WorktreeRemoved, 0, RemoveWorktree(ctx, t, false)
}

// RemoveTaskWorktree removes the worktree of task id, keeping its branch:
// Conflict when it is on another host; gone when it was not there.
func RemoveTaskWorktree(ctx context.Context, b Tasks, q TaskQuery, id string, force bool) (t task.Task, gone bool, err error) {
	t, out, err := TaskWorktree(ctx, b, q, id)
	switch {
	case err != nil:
		return t, false, err
	case t.WorktreeHost != b.TaskHost():
		return t, false, errkind.New(errkind.Conflict, "the worktree of %s is on host %s; run this there", id, t.WorktreeHost)
	case !out.Exists:
		return t, true, nil
	}
	return t, false, RemoveWorktree(ctx, t, force)
}
