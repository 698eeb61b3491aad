package task

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Events signed elsewhere. An agent on a host without the mount (package
// bridge) makes its event itself: it learns the task's next event number
// ([Board.Prepare]), builds the event with [OwnEvent] (a worktree event
// with [WorktreeEvent]) for that number, its own host and time, signs it
// with its key ([Event.Sign]), and the bridge publishes it with
// [Board.ApplySigned], which never signs: it checks the signature as the
// agent's and that the board's rules make exactly this event of the
// task's state. A number taken meanwhile is [ErrStale]: the agent
// prepares and signs again.

// MaxSkew is how far from the board's clock a signed event's time may be.
const MaxSkew = 5 * time.Minute

// ErrStale: another event took the number a signed event was made for.
var ErrStale = errors.New("task: the task changed meanwhile; sign the event again")

// ErrForged is wrapped by ApplySigned's error for an event whose signature
// does not verify as its agent's.
var ErrForged = errors.New("task: the event's signature does not verify")

// emptyText names, by event, the text an agent's own event must have.
var emptyText = map[string]string{EvCheckpoint: "checkpoint: the text", EvDone: "done: the outcome", EvFailed: "fail: the error"}

// OwnEvent returns the event agent makes on a task with event kind
// (EvClaimed, EvCheckpoint, EvDone, EvFailed or EvRetried), as Claim,
// Record, Finish, Fail and Retry make it: text is the checkpoint's text,
// the outcome, the error or the retry's note; c's Type and Files are a
// checkpoint's, its Detail a checkpoint's or a done event's. Seq, Time
// and Host are the caller's to set.
func OwnEvent(kind, agent, text string, c Checkpoint) (Event, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return Event{}, err
	}
	detail := c.Detail
	if len(detail) == 0 {
		detail = nil
	} else if err := detail.check(); err != nil {
		return Event{}, invalidError{err}
	}
	if detail != nil && kind != EvCheckpoint && kind != EvDone {
		return Event{}, invalidError{fmt.Errorf("a %s event has no detail", kind)}
	}
	var e Event
	switch kind {
	case EvClaimed:
		e = Event{Event: EvClaimed, Status: Claimed, Owner: agent}
	case EvCheckpoint:
		if c.Type == "" {
			c.Type = CkProgress
		}
		e = Event{Event: EvCheckpoint, Status: Claimed, Owner: agent, Summary: text, Type: c.Type, Files: c.Files}
		if len(e.Files) == 0 {
			e.Files = nil
		}
		if err := checkCheckpoint(e); err != nil {
			return Event{}, fmt.Errorf("checkpoint: %w", invalidError{err})
		}
	case EvDone:
		e = Event{Event: EvDone, Status: Done, Outcome: text}
	case EvFailed:
		e = Event{Event: EvFailed, Status: Failed, Error: text}
	case EvRetried:
		e = Event{Event: EvRetried, Status: Pending, Note: text}
		if err := checkText("note", text); err != nil {
			return Event{}, invalidError{err}
		}
	default:
		return Event{}, fmt.Errorf("%w: event %q is not one an agent signs for itself", ErrInvalid, kind)
	}
	if what := emptyText[kind]; what != "" && strings.TrimSpace(text) == "" {
		return Event{}, invalidError{errors.New(what + " is empty")}
	}
	e.Agent, e.Detail = agent, detail
	return e, nil
}

// Sign signs e as an event of task id of channel with s, s being e's
// agent's key.
func (e *Event) Sign(s *signing.Signer, channel, id string) error {
	if s == nil || s.Agent() != e.Agent {
		return fmt.Errorf("task: the event is %s's: sign it with %s's key", e.Agent, e.Agent)
	}
	e.Signature = s.Sign(e.Payload(channel, id))
	return nil
}

// Prepare returns task id after releasing its claim if the owner is gone
// (as Claim does, by "collab", as a sweep does) and the number its next
// event takes: Events+1.
func (b *Board) Prepare(id string) (Task, error) {
	t, err := b.Get(id)
	if err != nil || t.Status != Claimed {
		return t, err
	}
	if gone, _ := b.ownerGone(t); !gone {
		return t, nil
	}
	return b.transition(id, func(cur Task) (Event, error) {
		if cur.Status != Claimed || cur.Owner != t.Owner {
			return Event{}, nil
		}
		gone, why := b.ownerGone(cur)
		if !gone {
			return Event{}, nil
		}
		return b.release(cur, sweeper(), why), nil
	})
}

// ApplySigned publishes e, signed by its agent for task id, as that task's
// event e.Seq. It refuses (without writing) an event whose signature does
// not verify as its agent's (ErrForged), whose time is more than MaxSkew
// from the board's clock, that the rules do not make of the task's state
// (ErrNotReady, ErrClosed, ErrNotOwner, ErrNotFailed, *ClaimedError,
// ErrInvalid: as Claim, Record, Finish, Fail, Retry and RecordWorktree),
// or whose number is
// taken (ErrStale). A claim already the agent's is no event: the task is
// returned as it is.
func (b *Board) ApplySigned(id string, e Event) (Task, error) {
	if e.Signature == nil {
		return Task{}, fmt.Errorf("%w: unsigned", ErrForged)
	}
	if v := e.Verify(b.Verifier, b.Channel, id); v != signing.Verified {
		return Task{}, fmt.Errorf("%w: %s", ErrForged, v)
	}
	if d := b.now().Sub(e.Time); d > MaxSkew || d < -MaxSkew {
		return Task{}, fmt.Errorf("%w: the event's time %s is %s from this host's clock", ErrInvalid, e.Time.Format(time.RFC3339), d.Round(time.Second))
	}
	if len(e.Host) > 255 || tree.Printable(e.Host) != e.Host {
		return Task{}, fmt.Errorf("%w: host %q", ErrInvalid, tree.Printable(e.Host))
	}
	want, err := agentsEvent(e)
	if err != nil {
		return Task{}, err
	}
	want.Seq, want.Time, want.Host, want.Signature = e.Seq, e.Time, e.Host, e.Signature
	if string(want.Payload(b.Channel, id)) != string(e.Payload(b.Channel, id)) || e.Event != EvRetried && e.Note != "" || e.Event != EvWorktree && (e.Worktree != "" || e.Branch != "") {
		return Task{}, fmt.Errorf("%w: not a %s event as an agent makes it", ErrInvalid, e.Event)
	}
	return b.transition(id, func(t Task) (Event, error) {
		if t.Events+1 != e.Seq {
			return Event{}, fmt.Errorf("%w (task %s's next event is %d, this one was made as %d)", ErrStale, id, t.Events+1, e.Seq)
		}
		return decide(id, t, want)
	})
}

// agentsEvent is the event e's agent makes of e's kind with e's texts,
// files, detail, worktree and branch: by OwnEvent, or WorktreeEvent for a
// worktree event.
func agentsEvent(e Event) (Event, error) {
	switch e.Event {
	case EvWorktree:
		return WorktreeEvent(e.Agent, e.Worktree, e.Branch)
	case EvRetried:
		return OwnEvent(e.Event, e.Agent, e.Note, Checkpoint{Detail: e.Detail})
	}
	return OwnEvent(e.Event, e.Agent, e.Summary+e.Outcome+e.Error, Checkpoint{Type: e.Type, Files: e.Files, Detail: e.Detail})
}
