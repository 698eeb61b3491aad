package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/task"
	"github.com/collabdev/collab/internal/workspace/worktree"
)

// worktreeFlags are the task commands' worktree flags: claim's --worktree,
// --repo and --base, done's --remove-worktree and --force, worktree rm's
// --force.
type worktreeFlags struct {
	add, remove, force, rm bool
	repo, base             string
}

// check refuses the flags that go with another: --repo and --base without
// --worktree, done's --force without --remove-worktree, worktree's
// --force without rm.
func (w worktreeFlags) check(sub string, changed func(string) bool) error {
	switch {
	case sub == "claim" && !w.add && (changed("repo") || changed("base")):
		return usageErrorf("task claim: --repo and --base go with --worktree")
	case sub == "done" && w.force && !w.remove:
		return usageErrorf("task done: --force goes with --remove-worktree")
	case sub == "worktree" && w.force && !w.rm:
		return usageErrorf("task worktree: --force goes with rm")
	}
	return nil
}

// taskBoard is the task board a task command acts on, through the
// service it chose (the mount, or a bridge with --remote), as its agent:
// the git repository and its worktrees are this host's.
type taskBoard struct {
	svc    service.Workspace
	a      service.Actor
	q      service.TaskQuery
	remote bool
}

func (b taskBoard) Get(ctx context.Context, id string) (task.Task, error) {
	s, err := b.svc.Task(ctx, b.q, id)
	return s.Task, err
}

func (b taskBoard) Claim(ctx context.Context, id string) (task.Task, error) {
	return b.svc.ClaimTask(ctx, b.a, b.q, id)
}

func (b taskBoard) RecordWorktree(ctx context.Context, id, path, branch string) (task.Task, error) {
	return b.svc.RecordTaskWorktree(ctx, b.a, b.q, id, path, branch)
}

// Host is this host's name as the board writes it in this host's events.
func (b taskBoard) Host() string    { return b.svc.TaskHost() }
func (b taskBoard) Channel() string { return b.q.Channel }

// claimWorktree claims task id for by and gives it a worktree of its own:
// the one recorded on the task if it is on this host and still there,
// else a new one on a new branch, recorded on the task. A worktree made
// here is removed again (and its branch deleted) when it cannot be
// recorded.
func claimWorktree(ctx context.Context, b taskBoard, id, by string, w worktreeFlags, getenv env, p taskPrinter) error {
	dir := w.repo
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return fmt.Errorf("task claim: %w", err)
		}
	}
	repo, err := worktree.Repo(ctx, dir)
	if err != nil {
		return fmt.Errorf("task claim: %w", err)
	}
	before, err := b.Get(ctx, id)
	if err != nil {
		return err
	}
	if before.Status == task.Claimed && before.Owner == by && hasWorktree(before, b.Host()) {
		return p.claimed(before) // ours already, with its worktree
	}
	t, err := b.Claim(ctx, id)
	var ce *task.ClaimedError
	if errors.As(err, &ce) {
		return &exitError{code: exitRefused, msg: err.Error()}
	}
	if err != nil {
		return err
	}
	path, branch, made := t.Worktree, t.Branch, false
	if !hasWorktree(t, b.Host()) {
		if path, branch, err = addTaskWorktree(ctx, repo, w.base, t, getenv); err != nil {
			return fmt.Errorf("task claim: %s is claimed by %s, but has no worktree: %w", id, by, err)
		}
		made = true
	}
	t, err = b.RecordWorktree(ctx, id, path, branch)
	if err != nil {
		if made {
			_ = worktree.Remove(ctx, repo, path, true)
			_ = worktree.DeleteBranch(ctx, repo, branch)
		}
		return fmt.Errorf("task claim: record the worktree of %s: %w", id, err)
	}
	return p.claimed(t)
}

// addTaskWorktree adds a worktree of repo for task t on a new branch from
// base, named from the task's id and title, where neither the branch nor
// the folder exists yet.
func addTaskWorktree(ctx context.Context, repo, base string, t task.Task, getenv env) (path, branch string, err error) {
	dir := getenv(envWorktrees)
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
	if err := worktree.Add(ctx, repo, base, branch, path); err != nil {
		return "", "", err
	}
	return path, branch, nil
}

// hasWorktree reports whether t's recorded worktree is on host and there.
func hasWorktree(t task.Task, host string) bool {
	if t.Worktree == "" || t.WorktreeHost != host {
		return false
	}
	fi, err := os.Stat(t.Worktree)
	return err == nil && fi.IsDir()
}

// claimed prints a task claimed with a worktree.
func (p taskPrinter) claimed(t task.Task) error {
	if err := p.one(t); err != nil || p.json {
		return err
	}
	_, err := fmt.Fprintf(p.w, "worktree %s (branch %s)\n", t.Worktree, t.Branch)
	return err
}

// beforeDone refuses, before the task is finished, a --remove-worktree
// that could not be done: the worktree on another host, or with
// uncommitted changes and no --force. It checks only a task by owns;
// Finish reports the others.
func (w worktreeFlags) beforeDone(ctx context.Context, b taskBoard, id, by string) error {
	if !w.remove {
		return nil
	}
	t, err := b.Get(ctx, id)
	if err != nil || t.Status != task.Claimed || t.Owner != by || t.Worktree == "" {
		return nil
	}
	if t.WorktreeHost != b.Host() {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("task done: the worktree of %s is on host %s, not this one (%s); the task is not finished", id, t.WorktreeHost, b.Host())}
	}
	if w.force {
		return nil
	}
	if _, err := os.Stat(t.Worktree); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	st, err := checkedWorktree(ctx, t)
	if err != nil {
		return fmt.Errorf("task done: %w; the task is not finished", err)
	}
	if len(st.Dirty) > 0 {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("task done: worktree %s has uncommitted changes (%s); commit them, or pass --force to remove it anyway; the task is not finished",
			t.Worktree, strings.Join(st.Dirty, ", "))}
	}
	return nil
}

// afterDone deals with the worktree of finished task t: removes it with
// --remove-worktree; else, on a terminal, offers to remove it when it is
// clean; else keeps it and says how to remove it. Notes go to stderr.
func (w worktreeFlags) afterDone(ctx context.Context, b taskBoard, t task.Task, tty bool, stdin io.Reader, stderr io.Writer) error {
	if t.Worktree == "" {
		return nil
	}
	rm := fmt.Sprintf("collab task worktree rm %s --channel %s", t.ID, b.Channel())
	if b.remote {
		rm += " --remote"
	}
	switch {
	case t.WorktreeHost != b.Host():
		fmt.Fprintf(stderr, "collab: the worktree of %s is on host %s: %s (branch %s); remove it there with: %s\n", t.ID, t.WorktreeHost, t.Worktree, t.Branch, rm)
		return nil
	case !hasWorktree(t, b.Host()):
		return nil // removed already
	case w.remove:
		return removeTaskWorktree(ctx, t, w.force, "task done", stderr)
	case !tty:
		fmt.Fprintf(stderr, "collab: worktree %s (branch %s) kept; remove it with: %s\n", t.Worktree, t.Branch, rm)
		return nil
	}
	st, err := checkedWorktree(ctx, t)
	if err != nil {
		return fmt.Errorf("task done: %w", err)
	}
	if len(st.Dirty) > 0 {
		fmt.Fprintf(stderr, "collab: worktree %s (branch %s) kept: it has %d uncommitted changes; %s --force removes it anyway\n", t.Worktree, t.Branch, len(st.Dirty), rm)
		return nil
	}
	fmt.Fprintf(stderr, "Remove worktree %s? The branch %s stays. [y/N] ", t.Worktree, t.Branch)
	answer, _ := bufio.NewReader(stdin).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		fmt.Fprintf(stderr, "collab: worktree kept; remove it with: %s\n", rm)
		return nil
	}
	return removeTaskWorktree(ctx, t, false, "task done", stderr)
}

// checkedWorktree is the state of t's worktree, refused when it has
// another branch checked out than the one recorded (so a recorded path
// never leads to removing someone else's work).
func checkedWorktree(ctx context.Context, t task.Task) (*worktree.State, error) {
	st, err := worktree.Status(ctx, t.Worktree, "")
	if err != nil {
		return nil, err
	}
	if st.Branch != t.Branch {
		return nil, fmt.Errorf("worktree %s has %q checked out, not the task's branch %s; not touching it", t.Worktree, st.Branch, t.Branch)
	}
	return st, nil
}

// removeTaskWorktree removes t's worktree, keeping its branch; one with
// uncommitted changes is refused (exit 4) unless force.
func removeTaskWorktree(ctx context.Context, t task.Task, force bool, cmd string, stderr io.Writer) error {
	if _, err := checkedWorktree(ctx, t); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	err := worktree.Remove(ctx, t.Worktree, t.Worktree, force)
	var de *worktree.DirtyError
	if errors.As(err, &de) {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("%s: %v; commit them, or pass --force to remove it anyway", cmd, err)}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	fmt.Fprintf(stderr, "collab: removed worktree %s (branch %s kept)\n", t.Worktree, t.Branch)
	return nil
}

// taskWorktree is collab task worktree [rm] ID: the task's worktree and
// its uncommitted changes, or its removal.
func taskWorktree(ctx context.Context, b taskBoard, id string, w worktreeFlags, p taskPrinter, stderr io.Writer) error {
	t, err := b.Get(ctx, id)
	if err != nil {
		return err
	}
	cmd := "task worktree"
	if w.rm {
		cmd += " rm"
	}
	switch {
	case t.Worktree == "":
		return &exitError{code: exitNothing, msg: fmt.Sprintf("%s: task %s has no worktree", cmd, id)}
	case w.rm && t.WorktreeHost != b.Host():
		return &exitError{code: exitRefused, msg: fmt.Sprintf("%s: the worktree of %s is on host %s; run this there", cmd, id, t.WorktreeHost)}
	case w.rm && !hasWorktree(t, b.Host()):
		fmt.Fprintf(stderr, "collab: worktree %s is gone already\n", t.Worktree)
		return nil
	case w.rm:
		return removeTaskWorktree(ctx, t, w.force, cmd, stderr)
	}
	out := struct {
		ID       string   `json:"id"`
		Worktree string   `json:"worktree"`
		Branch   string   `json:"branch"`
		Host     string   `json:"host,omitempty"`
		Exists   bool     `json:"exists"`
		Dirty    []string `json:"dirty,omitempty"`
	}{ID: id, Worktree: t.Worktree, Branch: t.Branch, Host: t.WorktreeHost}
	if hasWorktree(t, b.Host()) {
		st, err := worktree.Status(ctx, t.Worktree, "")
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		out.Exists, out.Dirty = true, st.Dirty
	}
	if p.json {
		return writeJSON(p.w, out)
	}
	var s strings.Builder
	fmt.Fprintf(&s, "%s  worktree %s (branch %s", id, out.Worktree, out.Branch)
	if out.Host != "" && out.Host != b.Host() {
		fmt.Fprintf(&s, ", on host %s", out.Host)
	}
	s.WriteString(")\n")
	switch {
	case out.Host == b.Host() && !out.Exists:
		s.WriteString("gone\n")
	case len(out.Dirty) > 0:
		fmt.Fprintf(&s, "uncommitted: %s\n", strings.Join(out.Dirty, ", "))
	case out.Exists:
		s.WriteString("clean\n")
	}
	_, err = io.WriteString(p.w, s.String())
	return err
}

type terminalKey struct{}

// withTerminal tells the commands run with ctx whether standard input is
// a terminal (tests; main leaves it to terminalFor).
func withTerminal(ctx context.Context, tty bool) context.Context {
	return context.WithValue(ctx, terminalKey{}, tty)
}

// terminalFor reports whether the command may ask a question on stdin:
// it is a terminal and was not read for the command's text.
func terminalFor(ctx context.Context, stdin io.Reader, used bool) bool {
	if used {
		return false
	}
	if tty, ok := ctx.Value(terminalKey{}).(bool); ok {
		return tty
	}
	f, ok := stdin.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
