package mcpserver

import (
	"context"
	"errors"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/internal/workspace/delegate"
	"github.com/collabdev/collab/internal/workspace/task"
)

// bridged is the store of a host without the tree (`collab mcp --remote`):
// every read and write is a request to a bridge (package remote), posts
// go through the client's outbox, replies are waited for on the CHAT
// stream. What needs the tree itself (delegated sessions, other agents'
// jobs) is not served; see the package doc.
type bridged struct {
	cfg *Config
	c   *remote.Client
}

func (b bridged) post(ctx context.Context, m *channel.Message) (bool, error) {
	// What waits in the outbox goes first, in order.
	if res := b.c.Flush(ctx); res.Err != nil && !errors.Is(res.Err, remote.ErrQueued) {
		b.cfg.Logger.Warn("outbox", keyErr, res.Err)
	}
	_, err := b.c.Post(ctx, m)
	if errors.Is(err, remote.ErrQueued) {
		b.cfg.Logger.Warn("sent to the outbox only", keyMsg, m.ID, keyErr, err)
		return true, nil
	}
	return false, err
}

func (b bridged) newest(ctx context.Context, ch, since string, n int) ([]channel.Message, bool, error) {
	p, err := b.c.ReadSince(ctx, ch, since, n)
	if err != nil {
		var be *bridge.Error
		if errors.As(err, &be) && be.Code == bridge.CodeInvalid {
			return nil, false, errors.New(be.Msg)
		}
		return nil, false, err
	}
	for _, o := range p.Omitted {
		b.cfg.Logger.Warn("a message too big for a bridge reply is left out", keyMsg, o.ID)
	}
	return p.Messages, p.More, nil
}

// awaiter follows ch on the stream from now (the bridge publishes every
// message that lands on the mount, a foreign writer's too), so a reply is
// seen whatever its writer's clock says.
func (b bridged) awaiter(_ context.Context, ch string, opt delegate.Options) (func(context.Context, string) (channel.Message, error), func(), error) {
	start := b.cfg.Now()
	return func(ctx context.Context, id string) (channel.Message, error) {
		return b.c.AwaitReply(ctx, ch, start, func(m *channel.Message) bool { return opt.IsReply(m, id) })
	}, func() {}, nil
}

func (b bridged) who(ctx context.Context) ([]Agent, error) {
	all, err := b.c.Who(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Agent, 0, len(all))
	for _, e := range all {
		if e.Status == nil {
			continue // registered, no heartbeat: as over the files
		}
		a := Agent{Agent: e.Agent, State: e.State, Host: e.Status.Host, Channel: e.Status.Channel, Working: e.Status.MessageID}
		if e.AgeSeconds != nil {
			a.AgeSeconds = float64(*e.AgeSeconds)
		}
		out = append(out, a)
	}
	return out, nil
}

// status asks the bridge, which finds the message's channel itself, and
// keeps its answer only for a message of ch.
func (b bridged) status(ctx context.Context, ch, id string) (delivery.Status, error) {
	st, err := b.c.Status(ctx, id)
	var be *bridge.Error
	if errors.As(err, &be) && be.Code == bridge.CodeNotFound || err == nil && st.Channel != ch {
		return delivery.Status{}, errNoMessage
	}
	return st, err
}

func (b bridged) board(ch string) (taskStore, error) {
	return bridgedBoard{c: b.c, ch: ch}, nil
}

// bridgedBoard is one channel's task board through the bridge's task op;
// the agent's events are signed here (remote.Client.TaskEvent).
type bridgedBoard struct {
	c  *remote.Client
	ch string
}

func (t bridgedBoard) ask(ctx context.Context, req bridge.TaskRequest) (bridge.TaskReply, error) {
	req.Channel = t.ch
	r, err := t.c.Task(ctx, req)
	var be *bridge.Error
	if errors.As(err, &be) {
		return r, errors.New(be.Msg)
	}
	return r, err
}

func (t bridgedBoard) List(ctx context.Context) ([]task.Task, error) {
	r, err := t.ask(ctx, bridge.TaskRequest{Action: "list"})
	return r.Tasks, err
}

func (t bridgedBoard) Claim(ctx context.Context, id string) (task.Task, error) {
	return t.event(ctx, id, task.EvClaimed, "")
}

func (t bridgedBoard) Next(ctx context.Context) (task.Task, error) {
	return t.c.NextTask(ctx, t.ch)
}

func (t bridgedBoard) Event(ctx context.Context, id, kind, text string) (task.Task, error) {
	return t.event(ctx, id, kind, text)
}

// event makes the agent's event; a claim refused because another agent
// holds the task is a *task.ClaimedError, as over the files.
func (t bridgedBoard) event(ctx context.Context, id, kind, text string) (task.Task, error) {
	got, err := t.c.TaskEvent(ctx, t.ch, id, kind, text, task.Checkpoint{})
	var re *remote.RefusedError
	if kind == task.EvClaimed && errors.As(err, &re) && re.Refusal == "claimed" {
		if r, serr := t.ask(ctx, bridge.TaskRequest{Action: "show", ID: id}); serr == nil && r.Task != nil {
			return task.Task{}, &task.ClaimedError{Task: id, Owner: r.Task.Owner}
		}
	}
	return got, err
}

func (t bridgedBoard) Context(ctx context.Context, id string, maxTokens int) (task.Context, error) {
	r, err := t.ask(ctx, bridge.TaskRequest{Action: "context", ID: id, MaxTokens: maxTokens})
	if err != nil {
		return task.Context{}, err
	}
	if r.Context == nil {
		return task.Context{}, errors.New("the bridge's answer has no context")
	}
	return *r.Context, nil
}
