package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/task"
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

// claimWorktree is claim --worktree: the task claimed, with its worktree.
func claimWorktree(ctx context.Context, b taskBoard, id string, w worktreeFlags, getenv env, p taskPrinter) error {
	t, err := service.ClaimWorktree(ctx, b.svc, b.a, b.q, id, service.WorktreeRequest{Repo: w.repo, Base: w.base, Dir: getenv(envWorktrees)})
	if err != nil {
		return fmt.Errorf("task claim: %w", err)
	}
	if err := p.one(t, nil); err != nil || p.json {
		return err
	}
	_, err = fmt.Fprintf(p.w, "worktree %s (branch %s)\n", t.Worktree, t.Branch)
	return err
}

// done finishes the task, then deals with its worktree as
// --remove-worktree says (or, on a terminal, as the user answers).
func (c *taskCmd) done(ctx context.Context, b taskBoard, p taskPrinter, stdin io.Reader, stderr io.Writer) error {
	w := service.DoneWorktree{Remove: c.wt.remove, Force: c.wt.force}
	t, err := service.FinishTask(ctx, b.svc, b.a, b.q, c.id, service.TaskReport{Text: c.text, Checkpoint: c.ck}, w)
	if err != nil {
		return fmt.Errorf("task done: %w", err)
	}
	if err := p.one(t, nil); err != nil {
		return err
	}
	if terminalFor(ctx, stdin, c.stdinUsed) {
		w.Ask = func(t task.Task) bool {
			fmt.Fprintf(stderr, "Remove worktree %s? The branch %s stays. [y/N] ", t.Worktree, t.Branch)
			answer, _ := bufio.NewReader(stdin).ReadString('\n')
			a := strings.ToLower(strings.TrimSpace(answer))
			return a == "y" || a == "yes"
		}
	}
	fate, dirty, err := service.FinishWorktree(ctx, b.svc, t, w)
	if err != nil {
		return fmt.Errorf("task done: %w", err)
	}
	rm := fmt.Sprintf("collab task worktree rm %s --channel %s", t.ID, b.q.Channel)
	if b.remote {
		rm += " --remote"
	}
	if note := service.FateNote(fate, t, dirty, rm); note != "" {
		fmt.Fprintf(stderr, "collab: %s\n", note)
	}
	return nil
}

// taskWorktree is collab task worktree [rm] ID: the task's worktree and
// its uncommitted changes, or its removal.
func taskWorktree(ctx context.Context, b taskBoard, id string, w worktreeFlags, p taskPrinter, stderr io.Writer) error {
	if w.rm {
		t, gone, err := service.RemoveTaskWorktree(ctx, b.svc, b.q, id, w.force)
		switch {
		case err != nil:
			return fmt.Errorf("task worktree rm: %w", err)
		case gone:
			fmt.Fprintf(stderr, "collab: worktree %s is gone already\n", t.Worktree)
		default:
			fmt.Fprintf(stderr, "collab: removed worktree %s (branch %s kept)\n", t.Worktree, t.Branch)
		}
		return nil
	}
	_, out, err := service.TaskWorktree(ctx, b.svc, b.q, id)
	switch {
	case err != nil:
		return fmt.Errorf("task worktree: %w", err)
	case p.json:
		return writeJSON(p.w, out)
	}
	_, err = io.WriteString(p.w, out.Text(b.svc.TaskHost()))
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
