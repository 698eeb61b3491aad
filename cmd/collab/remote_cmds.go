package main

// The wiring of --remote for doc and task: each action is one request to
// a bridge (internal/transport/remote); task events are signed here.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/internal/workspace/task"
)

// taskArgs is what task --remote needs of runTask's flags.
type taskArgs struct {
	sub, ch, id, by   string
	title, body, text string
	depends, status   []string
	ck                task.Checkpoint
	maxTokens         int
	keyPath           string
	p                 taskPrinter
	wt                worktreeFlags // claim --worktree, done --remove-worktree, worktree [rm]
	tty               bool          // done may ask on stdin whether to remove the worktree
	stdin             io.Reader
}

// taskRemote is task --remote: list, show, context and add ask the
// bridge; claim, next, checkpoint, done and fail are events signed here
// with the agent's key and verified by the bridge. Worktrees are made,
// read and removed in this host's git repository, as on the mount, and
// recorded on the task as a signed worktree event.
func taskRemote(ctx context.Context, rf *remoteFlags, nf *natsFlags, a taskArgs, getenv env, stderr io.Writer) error {
	cmd := "task " + a.sub
	agent, err := actingAgent(ctx, cmd, "agent", a.by)
	if err != nil {
		return err
	}
	signs := !slices.Contains([]string{"list", "show", "context", "add", "worktree"}, a.sub)
	c, err := remoteClient(ctx, cmd, rf, nf, agent, a.keyPath, signs, getenv, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	ask := func(req bridge.TaskRequest) (bridge.TaskReply, error) {
		req.Channel = a.ch
		r, err := c.Task(ctx, req)
		if errors.Is(err, remote.ErrUnreachable) {
			err = fmt.Errorf("%w; nothing was written", err)
		}
		return r, err
	}
	rb := remoteBoard{c: c, ch: a.ch}
	switch {
	case a.sub == "worktree":
		return taskWorktree(ctx, rb, a.id, a.wt, a.p, stderr)
	case a.sub == "claim" && a.wt.add:
		return claimWorktree(ctx, rb, a.id, agent, a.wt, getenv, a.p)
	case a.sub == "done":
		if err := a.wt.beforeDone(ctx, rb, a.id, agent); err != nil {
			return err
		}
	}
	switch a.sub {
	case "list":
		keep, err := statusFilter(a.status)
		if err != nil {
			return err
		}
		r, err := ask(bridge.TaskRequest{Action: "list"})
		if err != nil {
			return err
		}
		if r.More {
			fmt.Fprintln(stderr, "collab: the list is cut to what a bridge reply holds; list on the mount for all")
		}
		return a.p.list(slices.DeleteFunc(r.Tasks, func(t task.Task) bool { return !keep(t) }))
	case "show":
		r, err := ask(bridge.TaskRequest{Action: "show", ID: a.id})
		if err != nil {
			return err
		}
		if r.Task == nil {
			return fmt.Errorf("%s: the bridge's answer has no task", cmd)
		}
		if r.More {
			fmt.Fprintln(stderr, "collab: older events left out of what a bridge reply holds; show on the mount for all")
		}
		evs := make([]task.Event, len(r.Events))
		for i, e := range r.Events {
			evs[i] = e.Event
			evs[i].Verdict, _ = signing.ParseVerdict(e.Verdict)
			evs[i].Ignored = e.Ignored
		}
		return a.p.show(*r.Task, evs)
	case "context":
		r, err := ask(bridge.TaskRequest{Action: "context", ID: a.id, MaxTokens: a.maxTokens})
		if err != nil {
			return err
		}
		if r.Context == nil {
			return fmt.Errorf("%s: the bridge's answer has no context", cmd)
		}
		if a.p.json {
			return writeJSON(a.p.w, r.Context)
		}
		_, err = io.WriteString(a.p.w, r.Context.Text())
		return err
	case "add":
		r, err := ask(bridge.TaskRequest{Action: "add", Title: a.title, Body: a.body, Depends: a.depends})
		var be *bridge.Error
		if errors.As(err, &be) && be.Code == bridge.CodeInvalid {
			return usageErrorf("%s", be.Msg)
		}
		if err != nil {
			return err
		}
		if r.Task == nil {
			return fmt.Errorf("%s: the bridge's answer has no task", cmd)
		}
		if a.p.json {
			return writeJSON(a.p.w, r.Task)
		}
		_, err = fmt.Fprintln(a.p.w, r.Task.ID)
		return err
	case "next":
		got, err := c.NextTask(ctx, a.ch)
		switch {
		case errors.Is(err, task.ErrNoneReady):
			return &exitError{code: exitNothing, msg: "no ready task in channel " + a.ch}
		case errors.Is(err, remote.ErrUnreachable):
			return fmt.Errorf("%w; nothing was written", err)
		case err != nil:
			return err
		}
		return a.p.one(got)
	}
	kind := map[string]string{"claim": task.EvClaimed, "checkpoint": task.EvCheckpoint, "done": task.EvDone, "fail": task.EvFailed}[a.sub]
	t, err := c.TaskEvent(ctx, a.ch, a.id, kind, a.text, a.ck)
	var re *remote.RefusedError
	switch {
	case errors.As(err, &re) && re.Refusal == "claimed":
		return &exitError{code: exitRefused, msg: err.Error()}
	case errors.Is(err, task.ErrInvalid):
		return usageErrorf("%s: %v", cmd, err)
	case err != nil:
		return err
	}
	if a.sub == "done" {
		if err := a.p.one(t); err != nil {
			return err
		}
		return a.wt.afterDone(ctx, rb, t, a.tty, a.stdin, stderr)
	}
	return a.p.one(t)
}
