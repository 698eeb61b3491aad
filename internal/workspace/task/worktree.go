package task

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// EvWorktree records the git worktree and branch the owner of a claimed
// task works in (collab task claim --worktree). It changes no state: the
// task stays claimed by its owner.
const EvWorktree = "worktree"

// RecordWorktree records on task id, claimed by agent, that agent works in
// the git worktree at path (absolute, on this board's host) on branch.
func (b *Board) RecordWorktree(id, agent, path, branch string) (Task, error) {
	e, err := WorktreeEvent(agent, path, branch)
	if err != nil {
		return Task{}, err
	}
	return b.byOwner(id, agent, e)
}

// WorktreeEvent returns the worktree event agent makes on a task it has
// claimed, working in the git worktree at path (absolute, on the event's
// host) on branch: the event RecordWorktree writes and the one
// [Board.ApplySigned] accepts. Seq, Time and Host are the caller's to set.
func WorktreeEvent(agent, path, branch string) (Event, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return Event{}, err
	}
	e := Event{Event: EvWorktree, Status: Claimed, Owner: agent, Agent: agent, Worktree: path, Branch: branch}
	if err := checkWorktree(e); err != nil {
		return Event{}, fmt.Errorf("worktree: %w", invalidError{err})
	}
	return e, nil
}

// checkWorktree checks an event's worktree and branch: only a worktree
// event has them, and it has both, the worktree an absolute path, each one
// line of UTF-8 of at most MaxFile bytes.
func checkWorktree(e Event) error {
	if e.Event != EvWorktree {
		if e.Worktree != "" || e.Branch != "" {
			return fmt.Errorf("event %s with a worktree or branch", e.Event)
		}
		return nil
	}
	for _, f := range []struct{ what, s string }{{"worktree", e.Worktree}, {"branch", e.Branch}} {
		switch {
		case strings.TrimSpace(f.s) == "":
			return fmt.Errorf("the %s is empty", f.what)
		case len(f.s) > MaxFile:
			return fmt.Errorf("the %s is longer than %d bytes", f.what, MaxFile)
		case !utf8.ValidString(f.s) || strings.ContainsFunc(f.s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return fmt.Errorf("the %s %q has a control character or is not UTF-8", f.what, f.s)
		}
	}
	if !filepath.IsAbs(e.Worktree) {
		return errors.New("the worktree is not an absolute path")
	}
	return nil
}
