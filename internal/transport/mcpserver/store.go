package mcpserver

import (
	"context"
	"errors"

	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/documents"
	"github.com/collabdev/collab/internal/workspace/inbox"
	"github.com/collabdev/collab/internal/workspace/task"
)

// store is where the inbox, document and task tools read and write: the
// files of a mounted tree (files, the default) or a bridge over NATS
// (bridged, when Config.Remote is set). The messages tools call the
// service (Server.svc). The tools' rules (identity, limits, the views
// they return) are the same over both; a store only moves the data.
type store interface {
	// The stores of one channel's inbox, documents and task board.
	inbox(ch string) (inboxStore, error)
	documents(ch string) (docStore, error)
	board(ch string) (taskStore, error)
}

// inboxStore is the agent's inbox on one channel (package inbox).
type inboxStore interface {
	// unread returns the unread messages for the agent, oldest first; ack
	// acknowledges every message looked at.
	unread(ctx context.Context, ack bool) ([]inbox.Item, error)
	// ack acknowledges up to until and returns how many unread messages
	// for the agent it acknowledged; an id not in the channel wraps
	// inbox.ErrUnknownMessage.
	ack(ctx context.Context, until inbox.Until) (int, error)
}

// docStore is one channel's shared documents (package documents).
type docStore interface {
	Read(ctx context.Context, file string) (documents.Doc, error)
	Write(ctx context.Context, file, content, ifVersion string) (string, error)
	Append(ctx context.Context, file, content string) (string, error)
	Create(ctx context.Context, file, content string) (string, error)
	List(ctx context.Context) ([]documents.Entry, error)
}

// taskStore is one channel's task board (package task), every event made
// as the agent.
type taskStore interface {
	List(ctx context.Context) ([]task.Task, error)
	Claim(ctx context.Context, id string) (task.Task, error) // *task.ClaimedError when another holds it
	Next(ctx context.Context) (task.Task, error)
	Event(ctx context.Context, id, kind, text string) (task.Task, error) // EvCheckpoint, EvDone or EvFailed
	Context(ctx context.Context, id string, maxTokens int) (task.Context, error)
}

// files is the store of a mounted tree: today's packages over Config.Root.
type files struct{ cfg *Config }

func (f files) inbox(ch string) (inboxStore, error) {
	box, err := inbox.New(f.cfg.Root, f.cfg.Agent, inbox.Options{Channels: []string{ch}, Now: f.cfg.Now,
		Aliases: workflow.AgentAliases(f.cfg.Root, f.cfg.Agent)})
	if err != nil {
		return nil, err
	}
	return filesInbox{box}, nil
}

type filesInbox struct{ b *inbox.Inbox }

func (i filesInbox) unread(_ context.Context, ack bool) ([]inbox.Item, error) {
	if ack {
		return i.b.Check()
	}
	return i.b.Peek()
}

func (i filesInbox) ack(_ context.Context, until inbox.Until) (int, error) { return i.b.Ack(until) }

func (f files) documents(ch string) (docStore, error) {
	folder, err := documents.New(f.cfg.Root, ch, documents.Options{Host: f.cfg.Host})
	if err != nil {
		return nil, err
	}
	return filesDocs{folder}, nil
}

type filesDocs struct{ *documents.Folder }

func (d filesDocs) Read(_ context.Context, file string) (documents.Doc, error) {
	return d.Folder.Read(file)
}
func (d filesDocs) List(context.Context) ([]documents.Entry, error) { return d.Folder.List() }

func (f files) board(ch string) (taskStore, error) {
	b, err := task.New(f.cfg.Root, ch)
	if err != nil {
		return nil, err
	}
	if f.cfg.Host != "" {
		b.Host = f.cfg.Host
	}
	b.Now = f.cfg.Now
	b.Signer = f.cfg.Signer // the agent's events are signed, as its posts
	return filesBoard{b: b, agent: f.cfg.Agent}, nil
}

type filesBoard struct {
	b     *task.Board
	agent string
}

func (t filesBoard) List(context.Context) ([]task.Task, error) {
	tasks, _, err := t.b.List()
	return tasks, err
}

func (t filesBoard) Claim(_ context.Context, id string) (task.Task, error) {
	return t.b.Claim(id, t.agent)
}
func (t filesBoard) Next(context.Context) (task.Task, error) { return t.b.Next(t.agent) }

func (t filesBoard) Event(_ context.Context, id, kind, text string) (task.Task, error) {
	switch kind {
	case task.EvCheckpoint:
		return t.b.Checkpoint(id, t.agent, text)
	case task.EvDone:
		return t.b.Finish(id, t.agent, text)
	case task.EvFailed:
		return t.b.Fail(id, t.agent, text)
	}
	return task.Task{}, errors.New("unknown task event " + kind)
}

func (t filesBoard) Context(_ context.Context, id string, maxTokens int) (task.Context, error) {
	return t.b.Context(id, maxTokens)
}
