package remote

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/workspace/task"
)

// maxEventTries bounds how often an event is signed again after its
// number was taken meanwhile.
const maxEventTries = 10

// Task performs req (the bridge's task op) as the client's agent and
// returns the reply; a refusal is a *bridge.Error, its reply's Refusal
// says which rule refused. Use [Client.TaskEvent] for events: they are
// signed here.
func (c *Client) Task(ctx context.Context, req bridge.TaskRequest) (bridge.TaskReply, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return bridge.TaskReply{}, err
	}
	var r bridge.TaskReply
	if err := c.request(ctx, bridge.OpTask, body, &r); err != nil {
		return r, fmt.Errorf("task %s: %w", req.Action, err)
	}
	return r, nil
}

// RefusedError is a task event the board's rules refused (bridge.TaskReply's
// Refusal: claimed, not-ready, closed, not-owner, stale).
type RefusedError struct {
	Refusal string
	Err     error
}

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Host is the host name the client's task events carry: this host's,
// where the worktrees it records are.
func (c *Client) Host() string {
	host, _ := os.Hostname()
	return cmp.Or(host, "remote")
}

// TaskWorktree records on task id of channel ch, claimed by the client's
// agent, that the agent works in the git worktree at path (absolute, on
// this host) on branch: a worktree event built with task.WorktreeEvent,
// signed and sent as [Client.TaskEvent] sends its events.
func (c *Client) TaskWorktree(ctx context.Context, ch, id, path, branch string) (task.Task, error) {
	e, err := task.WorktreeEvent(c.cfg.Agent, path, branch)
	if err != nil {
		return task.Task{}, err
	}
	return c.signedEvent(ctx, ch, id, e)
}

// TaskEvent makes the client's agent's event kind (task.EvClaimed,
// EvCheckpoint, EvDone, EvFailed; text and c as task.OwnEvent takes them)
// on task id of channel ch: it prepares the task on the bridge, builds the
// event with task.OwnEvent for the next number, this host and the
// client's clock, signs it with the agent's key (ErrNoKey without one),
// and sends it; the bridge verifies and publishes it, never signing.
// When the number was taken meanwhile it prepares and signs again. A
// claim of a task the agent already holds returns the task. A refusal of
// the board's rules is a *RefusedError. Events are not queued in the
// outbox (an event is made for the task's state at the time).
func (c *Client) TaskEvent(ctx context.Context, ch, id, kind, text string, ck task.Checkpoint) (task.Task, error) {
	e, err := task.OwnEvent(kind, c.cfg.Agent, text, ck)
	if err != nil {
		return task.Task{}, err
	}
	return c.signedEvent(ctx, ch, id, e)
}

// signedEvent sends e, the agent's event without Seq, Time and Host, as
// the next event of task id of ch, signed: see [Client.TaskEvent].
func (c *Client) signedEvent(ctx context.Context, ch, id string, e task.Event) (task.Task, error) {
	if c.cfg.Signer == nil {
		return task.Task{}, ErrNoKey
	}
	kind := e.Event
	e.Host = c.Host()
	for range maxEventTries {
		r, err := c.Task(ctx, bridge.TaskRequest{Action: "prepare", Channel: ch, ID: id})
		if err != nil {
			return task.Task{}, err
		}
		if r.Task == nil {
			return task.Task{}, fmt.Errorf("task %s: the bridge's answer has no task", id)
		}
		if kind == task.EvClaimed && r.Task.Status == task.Claimed && r.Task.Owner == c.cfg.Agent {
			return *r.Task, nil
		}
		e.Seq, e.Time = r.Task.Events+1, c.cfg.Now().UTC()
		if err := e.Sign(c.cfg.Signer, ch, id); err != nil {
			return task.Task{}, err
		}
		body, err := json.Marshal(e)
		if err != nil {
			return task.Task{}, err
		}
		r, err = c.Task(ctx, bridge.TaskRequest{Action: "event", Channel: ch, ID: id, Event: body})
		var be *bridge.Error
		switch {
		case err == nil && r.Task != nil:
			return *r.Task, nil
		case err == nil:
			return task.Task{}, fmt.Errorf("task %s: the bridge's answer has no task", id)
		case r.Refusal == "stale":
			continue
		case r.Refusal != "" && errors.As(err, &be):
			return task.Task{}, &RefusedError{Refusal: r.Refusal, Err: fmt.Errorf("task %s: %s", kind, be.Msg)}
		}
		return task.Task{}, err
	}
	return task.Task{}, fmt.Errorf("task %s: %w", id, task.ErrContended)
}

// NextTask claims for the client's agent the first ready task of ch, in id
// order, as task.Board.Next does on the mount: a task taken meanwhile is
// skipped. With none it returns an error wrapping task.ErrNoneReady.
func (c *Client) NextTask(ctx context.Context, ch string) (task.Task, error) {
	r, err := c.Task(ctx, bridge.TaskRequest{Action: "list", Channel: ch})
	if err != nil {
		return task.Task{}, err
	}
	for _, t := range r.Tasks {
		if !t.Ready {
			continue
		}
		got, err := c.TaskEvent(ctx, ch, t.ID, task.EvClaimed, "", task.Checkpoint{})
		var re *RefusedError
		if errors.As(err, &re) {
			continue // taken meanwhile
		}
		return got, err
	}
	return task.Task{}, fmt.Errorf("%w in channel %s", task.ErrNoneReady, ch)
}
