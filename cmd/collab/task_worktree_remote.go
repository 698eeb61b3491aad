package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/internal/workspace/task"
)

// remoteBoard is a channel's task board through a bridge (task --remote)
// as a worktreeBoard: the git repository and its worktrees are this
// host's, the task and its events the mount's; the events are signed here
// by the client's agent.
type remoteBoard struct {
	c  *remote.Client
	ch string
}

func (r remoteBoard) Get(ctx context.Context, id string) (task.Task, error) {
	rep, err := r.c.Task(ctx, bridge.TaskRequest{Action: "show", Channel: r.ch, ID: id})
	if err != nil {
		return task.Task{}, err
	}
	if rep.Task == nil {
		return task.Task{}, fmt.Errorf("task %s: the bridge's answer has no task", id)
	}
	return *rep.Task, nil
}

func (r remoteBoard) Claim(ctx context.Context, id, agent string) (task.Task, error) {
	return remoteRefused(r.c.TaskEvent(ctx, r.ch, id, task.EvClaimed, "", task.Checkpoint{}))
}

func (r remoteBoard) RecordWorktree(ctx context.Context, id, agent, path, branch string) (task.Task, error) {
	return remoteRefused(r.c.TaskWorktree(ctx, r.ch, id, path, branch))
}

func (r remoteBoard) Host() string    { return r.c.Host() }
func (r remoteBoard) Channel() string { return r.ch }

// remoteRefused makes a claim the bridge refused as another agent's an
// exit 4, as on the mount.
func remoteRefused(t task.Task, err error) (task.Task, error) {
	var re *remote.RefusedError
	if errors.As(err, &re) && re.Refusal == "claimed" {
		return t, &exitError{code: exitRefused, msg: err.Error()}
	}
	return t, err
}
