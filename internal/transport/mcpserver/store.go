package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/workspace/delegate"
	"github.com/collabdev/collab/internal/workspace/task"
	"github.com/collabdev/collab/presence"
)

// store is where the tools read and write: the files of a mounted tree
// (files, the default) or a bridge over NATS (bridged, when Config.Remote
// is set). The tools' rules (identity, limits, the views they return) are
// the same over both; a store only moves the data.
type store interface {
	// post writes m, whose SessionID, From, To, Content and Metadata are
	// set, and fills in its id and time. queued reports a write kept in
	// the remote host's outbox for later (no bridge now).
	post(ctx context.Context, m *channel.Message) (queued bool, err error)
	// newest returns the newest n messages of ch after since (see
	// channel.NewestSince), oldest first, and whether older ones after
	// since were left out.
	newest(ctx context.Context, ch, since string, n int) ([]channel.Message, bool, error)
	// awaiter returns, before a request is posted on ch, the function that
	// waits for its reply, and a function that releases what it holds.
	awaiter(ctx context.Context, ch string, opt delegate.Options) (wait func(ctx context.Context, id string) (channel.Message, error), stop func(), err error)
	// who returns every agent's presence as the tool shows it.
	who(ctx context.Context) ([]Agent, error)
	// status returns the delivery status of message id of channel ch; a
	// message ch does not hold, whatever another channel holds, is
	// errNoMessage.
	status(ctx context.Context, ch, id string) (delivery.Status, error)

	// The store of one channel's task board.
	board(ch string) (taskStore, error)
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

func (f files) post(ctx context.Context, m *channel.Message) (bool, error) {
	w := &channel.Writer{Root: f.cfg.Root, Now: f.cfg.Now, Signer: f.cfg.Signer}
	if err := w.Post(m); err != nil {
		return false, err
	}
	if f.cfg.Publish != nil {
		if err := f.cfg.Publish(ctx, m); err != nil {
			f.cfg.Logger.Warn("sent as a file only", keyMsg, m.ID, keyErr, err)
		}
	}
	return false, nil
}

func (f files) newest(_ context.Context, ch, since string, n int) ([]channel.Message, bool, error) {
	msgs, more, _, err := channel.NewestSince(f.cfg.Root, ch, since, n)
	return msgs, more, err
}

func (f files) awaiter(ctx context.Context, ch string, opt delegate.Options) (func(context.Context, string) (channel.Message, error), func(), error) {
	stop := func() {}
	if f.cfg.Wake != nil {
		wake, stopWake, err := f.cfg.Wake(ctx)
		if err != nil {
			f.cfg.Logger.Warn("waiting by polling only", keyErr, err)
		} else {
			opt.Wake, stop = wake, stopWake
		}
	}
	r, err := delegate.Before(f.cfg.Root, ch, opt)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return func(ctx context.Context, id string) (channel.Message, error) {
		return delegate.WaitWith(ctx, r, id, opt)
	}, stop, nil
}

func (f files) who(context.Context) ([]Agent, error) {
	all, _, err := presence.ReadAll(f.cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("read presence: %w", err)
	}
	now := f.cfg.Now()
	out := make([]Agent, 0, len(all))
	for _, st := range all {
		age, _ := st.Age(now)
		out = append(out, Agent{
			Agent:      st.AgentID,
			State:      st.Effective(now, 0, f.cfg.Host, proc.PIDAlive),
			AgeSeconds: age.Round(time.Second).Seconds(),
			Host:       st.Host,
			Channel:    st.Channel,
			Working:    st.MessageID,
		})
	}
	return out, nil
}

// status reads id in ch, and nowhere else.
func (f files) status(_ context.Context, ch, id string) (delivery.Status, error) {
	st, err := delivery.Of(f.cfg.Root, ch, id, delivery.Options{Now: f.cfg.Now, Host: f.cfg.Host, Verifier: f.cfg.Verifier})
	if errors.Is(err, fs.ErrNotExist) {
		return delivery.Status{}, errNoMessage
	}
	return st, err
}

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
