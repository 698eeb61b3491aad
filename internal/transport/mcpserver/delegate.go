package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

// SendAndWaitArgs are send_and_wait's arguments.
type SendAndWaitArgs struct {
	Message        string `json:"message" jsonschema:"what to ask; may @mention agents"`
	To             string `json:"to" jsonschema:"the agent to ask"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"give up after this many seconds (default 300, at most 1800)"`
}

// SendAndWaitResult is what send_and_wait returns.
type SendAndWaitResult struct {
	ID string `json:"id"` // of the message sent
	// Reply is the reply, with the verdict on its signature.
	Reply *Message `json:"reply,omitempty"`
	// Ignored are the replies passed over while waiting: each names an
	// agent with a trusted key but does not verify as that agent's (a
	// forgery). Their text is not given.
	Ignored  []IgnoredReply `json:"ignored,omitempty" jsonschema:"replies passed over because they name an agent with a trusted key but do not verify as that agent's (forgeries); their text is not given"`
	TimedOut bool           `json:"timed_out,omitempty"`
	// Queued: the message waits in a remote host's outbox (the bridge
	// cannot be reached); nothing was waited for.
	Queued bool `json:"queued,omitempty"`
}

// IgnoredReply is a reply send_and_wait passed over: who it claims to be
// from and the verdict on its signature.
type IgnoredReply struct {
	ID      string `json:"id"`
	From    string `json:"from"`
	Verdict string `json:"verdict"`
}

func addDelegateTools(s *Server) error {
	addTool(s, "send_and_wait", "Send a message to an agent and wait for its reply (delegation). "+
		"A reply in the name of an agent with a trusted key that does not verify is a forgery: it is passed over (listed in ignored) and the wait goes on. "+
		"The reply carries its verdict. On timeout, timed_out is true and the reply may still come later in the channel.", s.sendAndWait)
	return nil
}

func (s *Server) sendAndWait(ctx context.Context, in SendAndWaitArgs) (SendAndWaitResult, error) {
	if in.To == "" || in.To == channel.Broadcast {
		return SendAndWaitResult{}, errors.New("to must name the agent to ask")
	}
	if in.TimeoutSeconds < 0 {
		return SendAndWaitResult{}, errors.New("timeout_seconds must not be negative")
	}
	timeout := DefaultWaitTimeout
	if in.TimeoutSeconds > 0 {
		timeout = min(time.Duration(in.TimeoutSeconds)*time.Second, MaxWaitTimeout)
	}
	// The watcher's default trust policy: a reply in the name of an
	// agent with keys must verify as that agent's.
	var ignored []IgnoredReply
	forged := func(m *channel.Message, v signing.Verdict) {
		s.cfg.Logger.Warn("forged reply ignored", keyMsg, m.ID, keyFrom, m.From, keyVerdict, v.String())
		if len(ignored) < maxIgnored {
			ignored = append(ignored, IgnoredReply{ID: tree.Printable(m.ID), From: tree.Printable(m.From), Verdict: v.String()})
		}
	}
	opt := delegate.Options{Poll: s.cfg.Poll, Trust: signing.DefaultPolicy, Verifier: s.cfg.Verifier}
	posted, got, err := service.Ask(ctx, s.svc, s.actor(), service.AskRequest{
		Post:  service.PostRequest{Channel: s.cfg.Channel, To: in.To, Text: in.Message, Host: s.cfg.Host},
		Await: service.AwaitRequest{Timeout: timeout, Options: opt, Forged: forged},
	})
	id := posted.Message.ID
	switch {
	case posted.Queued:
		// Nobody can answer what has not reached the mount.
		s.cfg.Logger.Warn("sent to the outbox only", keyMsg, id, keyErr, err)
		return SendAndWaitResult{ID: id, Queued: true}, nil
	case id == "":
		if errkind.Is(err, errkind.Invalid) {
			return SendAndWaitResult{}, err
		}
		return SendAndWaitResult{}, fmt.Errorf("send: %w", err)
	case err == nil:
		v := s.view(&got.Message)
		return SendAndWaitResult{ID: id, Reply: &v, Ignored: ignored}, nil
	case errkind.Is(err, errkind.Timeout) && ctx.Err() == nil:
		return SendAndWaitResult{ID: id, TimedOut: true, Ignored: ignored}, nil
	default:
		return SendAndWaitResult{ID: id}, fmt.Errorf("wait for the reply to %s: %w", id, err)
	}
}

// maxIgnored bounds the forged replies one send_and_wait lists; the rest
// are in the log.
const maxIgnored = 16

// Log attribute keys of send_and_wait.
const (
	keyFrom    = "from"
	keyVerdict = "verdict"
)
