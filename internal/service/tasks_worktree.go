package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/workspace/task"
	"github.com/collabdev/collab/internal/workspace/worktree"
)

// Task worktrees: an agent works on its task in a git worktree of its
// own, on this host, recorded on the task as a signed event. The git
// repository and its worktrees are the host's, whichever way the board
// is reached (the mount, a bridge), so these work over any Tasks.

// WorktreeRequest is where a task's worktree is made.
type WorktreeRequest struct {
	// Repo is a folder in the git repository; "" the working directory.
	Repo string
	// Base is the branch or commit to start from; "" the repository's HEAD.
	Base string
	// Dir is the folder worktrees go under ($COLLAB_WORKTREES); ""
	// REPO/../.collab-worktrees.
	Dir string
}

// WorktreeState is a task's worktree as `collab task worktree` shows it.
type WorktreeState struct {
	ID       string   `json:"id"`
	Worktree string   `json:"worktree"`
	Branch   string   `json:"branch"`
	Host     string   `json:"host,omitempty"`
	Exists   bool     `json:"exists"`
	Dirty    []string `json:"dirty,omitempty"`
}

// ClaimWorktree claims task id for a and gives it a worktree of its own:
// the one recorded on the task if it is on this host and still there,
// else a new one on a new branch, recorded on the task. A worktree made
// here is removed again (and its branch deleted) when it cannot be
// recorded. A claim another agent holds is Conflict, as ClaimTask's.
func ClaimWorktree(ctx context.Context, b Tasks, a Actor, q TaskQuery, id string, w WorktreeRequest) (task.Task, error) {
	by, err := AgentID(a.Name)
	if err != nil {
		return task.Task{}, err
	}
	dir := w.Repo
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return task.Task{}, err
		}
	}
	repo, err := worktree.Repo(ctx, dir)
	if err != nil {
		return task.Task{}, err
	}
	before, err := b.Task(ctx, q, id)
	if err != nil {
		return task.Task{}, err
	}
	if t := before.Task; t.Status == task.Claimed && t.Owner == by && WorktreeHere(t, b.TaskHost()) {
		return t, nil // ours already, with its worktree
	}
	t, err := b.ClaimTask(ctx, a, q, id)
	if err != nil {
		return task.Task{}, err
	}
	path, branch, made := t.Worktree, t.Branch, false
	if !WorktreeHere(t, b.TaskHost()) {
		if path, branch, err = addTaskWorktree(ctx, repo, w, t); err != nil {
			return task.Task{}, fmt.Errorf("%s is claimed by %s, but has no worktree: %w", id, by, err)
		}
		made = true
	}
	t, err = b.RecordTaskWorktree(ctx, a, q, id, path, branch)
	if err != nil {
		if made {
			_ = worktree.Remove(ctx, repo, path, true)
			_ = worktree.DeleteBranch(ctx, repo, branch)
		}
		return task.Task{}, errkind.Wrap(errkind.Of(err), fmt.Errorf("record the worktree of %s: %w", id, err))
	}
	return t, nil
}

// addTaskWorktree adds a worktree of repo for task t on a new branch from
// w.Base, named from the task's id and title, where neither the branch
// nor the folder exists yet.
func addTaskWorktree(ctx context.Context, repo string, w WorktreeRequest, t task.Task) (path, branch string, err error) {
	dir := w.Dir
	if dir != "" {
		if dir, err = filepath.Abs(dir); err != nil {
			return "", "", err
		}
	}
	var exErr error
	taken := func(name string) bool {
		if exErr != nil {
			return false
		}
		ok, err := worktree.BranchExists(ctx, repo, name)
		if err != nil {
			exErr = err
			return false
		}
		_, serr := os.Lstat(worktree.DefaultPath(dir, repo, name))
		return ok || serr == nil
	}
	branch = worktree.BranchName(t.ID+"-", t.Title, taken)
	if exErr != nil {
		return "", "", exErr
	}
	path, err = filepath.Abs(worktree.DefaultPath(dir, repo, branch))
	if err != nil {
		return "", "", err
	}
	if err := worktree.Add(ctx, repo, w.Base, branch, path); err != nil {
		return "", "", err
	}
	return path, branch, nil
}

// WorktreeHere reports whether t's recorded worktree is on host and there.
func WorktreeHere(t task.Task, host string) bool {
	if t.Worktree == "" || t.WorktreeHost != host {
		return false
	}
	fi, err := os.Stat(t.Worktree)
	return err == nil && fi.IsDir()
}

// CheckRemove refuses, before a's task id is finished, the removal of its
// worktree that could not be done: on another host, or with uncommitted
// changes and not force (Conflict; the task is not finished). It checks
// only a task a holds; finishing reports the others.
func CheckRemove(ctx context.Context, b Tasks, a Actor, q TaskQuery, id string, force bool) error {
	by, err := AgentID(a.Name)
	if err != nil {
		return err
	}
	s, err := b.Task(ctx, q, id)
	t := s.Task
	if err != nil || t.Status != task.Claimed || t.Owner != by || t.Worktree == "" {
		return nil
	}
	if host := b.TaskHost(); t.WorktreeHost != host {
		return errkind.New(errkind.Conflict, "the worktree of %s is on host %s, not this one (%s); the task is not finished", id, t.WorktreeHost, host)
	}
	if force {
		return nil
	}
	if _, err := os.Stat(t.Worktree); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	st, err := CheckedWorktree(ctx, t)
	if err != nil {
		return fmt.Errorf("%w; the task is not finished", err)
	}
	if len(st.Dirty) > 0 {
		return errkind.New(errkind.Conflict, "worktree %s has uncommitted changes (%s); commit them, or pass --force to remove it anyway; the task is not finished",
			t.Worktree, strings.Join(st.Dirty, ", "))
	}
	return nil
}

// CheckedWorktree is the state of t's worktree, refused when it has
// another branch checked out than the one recorded (so a recorded path
// never leads to removing someone else's work).
func CheckedWorktree(ctx context.Context, t task.Task) (*worktree.State, error) {
	st, err := worktree.Status(ctx, t.Worktree, "")
	if err != nil {
		return nil, err
	}
	if st.Branch != t.Branch {
		return nil, errkind.New(errkind.Conflict, "worktree %s has %q checked out, not the task's branch %s; not touching it", t.Worktree, st.Branch, t.Branch)
	}
	return st, nil
}

// RemoveWorktree removes t's worktree, keeping its branch; one with
// uncommitted changes is Conflict unless force.
func RemoveWorktree(ctx context.Context, t task.Task, force bool) error {
	if _, err := CheckedWorktree(ctx, t); err != nil {
		return err
	}
	err := worktree.Remove(ctx, t.Worktree, t.Worktree, force)
	var de *worktree.DirtyError
	if errors.As(err, &de) {
		return errkind.Wrap(errkind.Conflict, fmt.Errorf("%w; commit them, or pass --force to remove it anyway", err))
	}
	return err
}

// TaskWorktree returns task id with its worktree's state: NotFound when
// it has none. Only a worktree on this host is looked at.
func TaskWorktree(ctx context.Context, b Tasks, q TaskQuery, id string) (task.Task, WorktreeState, error) {
	s, err := b.Task(ctx, q, id)
	if err != nil {
		return task.Task{}, WorktreeState{}, err
	}
	t := s.Task
	if t.Worktree == "" {
		return t, WorktreeState{}, errkind.New(errkind.NotFound, "task %s has no worktree", id)
	}
	out := WorktreeState{ID: id, Worktree: t.Worktree, Branch: t.Branch, Host: t.WorktreeHost}
	if WorktreeHere(t, b.TaskHost()) {
		st, err := worktree.Status(ctx, t.Worktree, "")
		if err != nil {
			return t, out, err
		}
		out.Exists, out.Dirty = true, st.Dirty
	}
	return t, out, nil
}
