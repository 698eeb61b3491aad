package service

import (
	"context"
	"errors"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/inbox"
)

// InboxRequest is what Inbox reads.
type InboxRequest struct {
	// Agent is whose inbox: NAME or NAME@INSTANCE (an instance agent's
	// inbox also holds what is addressed to NAME in its instance's
	// channel, workflow.AgentAliases).
	Agent string
	// Channels are the channels read; none: every channel (on the mount;
	// a bridged host must name them).
	Channels []string
	// Peek acknowledges nothing; with Limit > 0 only the newest Limit
	// unread messages are returned.
	Peek  bool
	Limit int
}

// InboxResult is what Inbox returns.
type InboxResult struct {
	// Agent is the agent's id (NAME--INSTANCE for an instance agent).
	Agent string
	Items []inbox.Item
	// More is, with a Limit, how many more unread messages there may be
	// (a bound: files not read, which may not be for the agent).
	More int
	// Notes are what a reader should know and that is not an error (a
	// message left out of a bridge's reply), one line each.
	Notes []string
}

// AckRequest is what AckInbox acknowledges.
type AckRequest struct {
	Agent    string
	Channels []string
	// Until is a message id (best) or an RFC 3339 time.
	Until string
}

// Acked is what AckInbox did.
type Acked struct {
	Agent string
	// N is how many unread messages for the agent were acknowledged.
	N     int
	Until inbox.Until
	// Channel is the one channel acknowledged in, through a bridge
	// (which acks one channel at a time); "" on the mount.
	Channel string
}

// checkChannels checks the names of the channels a request gives.
func checkChannels(chans []string) error {
	for _, c := range chans {
		if err := tree.CheckName("channel", c); err != nil {
			return errkind.Wrap(errkind.Invalid, err)
		}
	}
	return nil
}

// openInbox opens agent's inbox over chans, the agent's workflow
// aliases included.
func (m *Mount) openInbox(agent string, chans []string) (string, *inbox.Inbox, error) {
	id, err := parseAgent("agent", agent)
	if err != nil {
		return "", nil, err
	}
	if err := checkChannels(chans); err != nil {
		return "", nil, err
	}
	root := m.cfg.Root
	b, err := inbox.New(root, id, inbox.Options{Channels: chans, Now: m.cfg.Now, Aliases: workflow.AgentAliases(root, id)})
	if err != nil {
		return "", nil, errkind.Wrap(errkind.Invalid, err)
	}
	return id, b, nil
}

// Inbox implements Workspace.
func (m *Mount) Inbox(_ context.Context, req InboxRequest) (InboxResult, error) {
	if req.Limit < 0 {
		return InboxResult{}, errkind.New(errkind.Invalid, "limit must not be negative")
	}
	id, b, err := m.openInbox(req.Agent, req.Channels)
	if err != nil {
		return InboxResult{}, err
	}
	res := InboxResult{Agent: id}
	switch {
	case req.Peek && req.Limit > 0:
		res.Items, res.More, err = b.PeekNewest(req.Limit)
	case req.Peek:
		res.Items, err = b.Peek()
	default:
		res.Items, err = b.Check()
	}
	if err != nil {
		return InboxResult{}, errkind.Wrap(errkind.Of(err), err)
	}
	return res, nil
}

// AckInbox implements Workspace.
func (m *Mount) AckInbox(_ context.Context, req AckRequest) (Acked, error) {
	until, err := parseUntil(req.Until)
	if err != nil {
		return Acked{}, err
	}
	id, b, err := m.openInbox(req.Agent, req.Channels)
	if err != nil {
		return Acked{}, err
	}
	n, err := b.Ack(until)
	if errors.Is(err, inbox.ErrUnknownMessage) {
		return Acked{}, errkind.Wrap(errkind.NotFound, err)
	}
	if err != nil {
		return Acked{}, errkind.Wrap(errkind.Of(err), err)
	}
	return Acked{Agent: id, N: n, Until: until}, nil
}

// parseUntil reads an acknowledgement's bound; a bad one is Invalid.
func parseUntil(s string) (inbox.Until, error) {
	if s == "" {
		return inbox.Until{}, errkind.New(errkind.Invalid, "no until: give a message id or a time")
	}
	u, err := inbox.ParseUntil(s)
	if err != nil {
		return inbox.Until{}, errkind.Wrap(errkind.Invalid, err)
	}
	return u, nil
}
