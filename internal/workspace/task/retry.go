package task

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// ErrNotFailed: only a failed task is retried.
var ErrNotFailed = errors.New("task: not failed; only a failed task is retried")

// Retry puts failed task id back to pending, by agent, with an optional
// note (why): a "retried" event. Anyone on the board may retry a failed
// task, as anyone may add one; the event names (and, with a key, is
// signed by) who did. The task's events stay: its checkpoints, its
// attempts (Task.Attempts) and the failure (Task.LastError).
func (b *Board) Retry(id, agent, note string) (Task, error) {
	return b.own(id, agent, EvRetried, note, Checkpoint{})
}

// State is t's state in words, as list, show and the context say it:
// "claimed by codex", "pending, blocked by failed t1", "pending, waits
// for t2", "ready", "done", "failed". address shows an agent's id (nil:
// as it is).
func (t Task) State(address func(string) string) string {
	return stateText(t.Status, t.Owner, t.Blockers, t.BlockedBy, address)
}

func stateText(status, owner string, blockers, blockedBy []string, address func(string) string) string {
	if address == nil {
		address = func(s string) string { return s }
	}
	switch {
	case status == Claimed:
		return "claimed by " + address(owner)
	case status == Pending && len(blockedBy) > 0:
		s := "pending, blocked by failed " + strings.Join(blockedBy, ", ")
		if len(blockers) > len(blockedBy) {
			var others []string
			for _, b := range blockers {
				if !slices.Contains(blockedBy, b) {
					others = append(others, b)
				}
			}
			s += "; waits for " + strings.Join(others, ", ")
		}
		return s
	case status == Pending && len(blockers) > 0:
		return "pending, waits for " + strings.Join(blockers, ", ")
	case status == Pending:
		return "ready"
	}
	return status
}

// Claim is a task an agent holds and the newest checkpoint of its claim
// (Checkpoint.Seq 0: none yet).
type Claim struct {
	Task       Task
	Checkpoint Event
}

// ClaimedBy returns the tasks agent has claimed (not done, failed or
// released), in id order, at most max of them (max <= 0: all), each with
// the newest checkpoint of its current claim: what a restarted agent needs
// to pick up where it left off. It only reads: no stale claim is released.
func (b *Board) ClaimedBy(agent string, max int) ([]Claim, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return nil, err
	}
	d, err := b.dir(false)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer d.Close()
	nums, err := numbers(d)
	if err != nil {
		return nil, fmt.Errorf("tasks of %s: %w", agent, err)
	}
	var out []Claim
	for _, n := range nums {
		c, ok := b.claimOf(d, FormatID(n), agent)
		if !ok {
			continue
		}
		if out = append(out, c); max > 0 && len(out) >= max {
			break
		}
	}
	return out, nil
}

// claimOf returns task id as a Claim when agent holds it.
func (b *Board) claimOf(d *safedir.Dir, id, agent string) (Claim, bool) {
	t, evs, _, err := b.load(d, id, 0)
	if err != nil || t.Status != Claimed || t.Owner != agent {
		return Claim{}, false
	}
	c := Claim{Task: t}
	for _, e := range evs {
		switch {
		case e.Ignored:
		case e.Event == EvClaimed:
			c.Checkpoint = Event{}
		case e.Event == EvCheckpoint:
			c.Checkpoint = e
		}
	}
	return c, true
}
