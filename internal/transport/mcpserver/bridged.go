package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/internal/workspace/documents"
	"github.com/collabdev/collab/internal/workspace/inbox"
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

func (b bridged) inbox(ch string) (inboxStore, error) {
	return bridgedInbox{b: b, ch: ch}, nil
}

// bridgedInbox is the agent's inbox on ch with this host's cursor
// (remote.Client.Unread, STATE/inbox). Workflow aliases are not read:
// they are in the tree.
type bridgedInbox struct {
	b  bridged
	ch string
}

func (i bridgedInbox) unread(ctx context.Context, ack bool) ([]inbox.Item, error) {
	items, omitted, looked, err := i.b.c.Inbox(ctx, i.ch)
	if err != nil {
		return nil, err
	}
	for _, o := range omitted {
		// Acknowledged with the rest, as inbox --remote does: said once.
		i.b.cfg.Logger.Warn("a message too big for a bridge reply is left out; read it on the mount", keyMsg, o.ID)
	}
	if ack && len(looked) > 0 {
		if err := i.b.c.Acknowledge(i.ch, looked); err != nil {
			return nil, err
		}
	}
	return items, nil
}

func (i bridgedInbox) ack(ctx context.Context, until inbox.Until) (int, error) {
	if until.ID != "" {
		return i.b.c.AckUntil(ctx, i.ch, until.ID)
	}
	msgs, _, err := i.b.c.Unread(ctx, i.ch)
	if err != nil {
		return 0, err
	}
	var ids []string
	n := 0
	for k := range msgs {
		if msgs[k].Time().After(until.Time) {
			continue
		}
		ids = append(ids, msgs[k].ID)
		if msgs[k].IsFor(i.b.cfg.Agent) {
			n++
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	return n, i.b.c.Acknowledge(i.ch, ids)
}

func (b bridged) documents(ch string) (docStore, error) {
	return bridgedDocs{c: b.c, ch: ch}, nil
}

// bridgedDocs is one channel's documents through the bridge's doc op.
type bridgedDocs struct {
	c  *remote.Client
	ch string
}

// do performs one doc action; the bridge's refusals become the errors
// package documents returns, so the tools say the same.
func (d bridgedDocs) do(ctx context.Context, req bridge.DocRequest) (bridge.DocReply, error) {
	req.Channel = d.ch
	r, err := d.c.Doc(ctx, req)
	var be *bridge.Error
	switch {
	case err == nil:
		return r, nil
	case errors.As(err, &be) && be.Code == bridge.CodeNotFound:
		return r, fmt.Errorf("%s: %w", be.Msg, fs.ErrNotExist)
	case errors.As(err, &be) && be.Code == bridge.CodeConflict && req.Action == "create":
		return r, fmt.Errorf("%s: %w", be.Msg, fs.ErrExist)
	case errors.As(err, &be) && be.Code == bridge.CodeConflict:
		return r, fmt.Errorf("%s (its version now: %s): %w", be.Msg, r.Version, documents.ErrConflict)
	case errors.As(err, &be):
		return r, errors.New(be.Msg)
	}
	return r, err
}

func (d bridgedDocs) Read(ctx context.Context, file string) (documents.Doc, error) {
	r, err := d.do(ctx, bridge.DocRequest{Action: "read", File: file})
	if err != nil {
		return documents.Doc{}, err
	}
	if r.Doc == nil {
		return documents.Doc{}, errors.New("the bridge's answer has no document")
	}
	return *r.Doc, nil
}

func (d bridgedDocs) change(ctx context.Context, req bridge.DocRequest) (string, error) {
	r, err := d.do(ctx, req)
	return r.Version, err
}

func (d bridgedDocs) Write(ctx context.Context, file, content, ifVersion string) (string, error) {
	return d.change(ctx, bridge.DocRequest{Action: "write", File: file, Content: content, IfVersion: ifVersion})
}

func (d bridgedDocs) Append(ctx context.Context, file, content string) (string, error) {
	return d.change(ctx, bridge.DocRequest{Action: "append", File: file, Content: content})
}

func (d bridgedDocs) Create(ctx context.Context, file, content string) (string, error) {
	return d.change(ctx, bridge.DocRequest{Action: "create", File: file, Content: content})
}

func (d bridgedDocs) List(ctx context.Context) ([]documents.Entry, error) {
	r, err := d.do(ctx, bridge.DocRequest{Action: "list"})
	return r.Entries, err
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
