package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
)

// DefaultReadLimit is how many messages channel_read and channel_peek
// return when the call gives no limit; MaxReadLimit caps any limit.
const (
	DefaultReadLimit = 50
	MaxReadLimit     = 500
)

// Message is a message as the tools return it.
type Message struct {
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	From      string `json:"from"`
	To        string `json:"to"`
	Type      string `json:"type,omitempty"`
	Text      string `json:"text"`
	Code      string `json:"code,omitempty"`
	InReplyTo string `json:"in_reply_to,omitempty"`
	// Mentioned is true when the message is addressed to this agent
	// (to, an @mention, or its name first).
	Mentioned bool `json:"mentioned,omitempty"`
	// Artifacts are the files the message refers to (content.artifacts,
	// read liberally: channel.Content.ArtifactList).
	Artifacts []channel.Artifact `json:"artifacts,omitempty" jsonschema:"files the message refers to: path, and when its writer said them size and sha256; the files are not in the tree"`
	// Verdict is the check of the message's signature against the
	// keyring: verified, unsigned, bad-signature, unknown-key or
	// revoked-key.
	Verdict string `json:"verdict" jsonschema:"the check of the sender's signature: verified, unsigned, bad-signature, unknown-key or revoked-key"`
}

func (s *Server) view(m *channel.Message) Message {
	v := Message{
		ID: m.ID, Timestamp: m.Timestamp, From: m.From, To: m.To, Type: m.Type,
		Text: m.Content.Text, InReplyTo: m.Metadata.InReplyTo, Mentioned: m.IsFor(s.cfg.Agent),
		Verdict:   m.Verify(s.cfg.Verifier, s.cfg.Channel).String(),
		Artifacts: m.Content.ArtifactList(),
	}
	if m.Content.Code != nil {
		v.Code = *m.Content.Code
	}
	if v.Type == "chat" {
		v.Type = ""
	}
	return v
}

// SendArgs are channel_send's arguments.
type SendArgs struct {
	Message string `json:"message" jsonschema:"the message to send; may @mention agents"`
	To      string `json:"to,omitempty" jsonschema:"the agent it is for (default: all)"`
	// Priority places the message in the addressee's inbox and queue.
	Priority string `json:"priority,omitempty" jsonschema:"high, normal or low (default: by its words: urgent, blocked, several addressees make it high)"`
	// InReplyTo threads the message as the answer to another.
	InReplyTo string `json:"in_reply_to,omitempty" jsonschema:"the id of the message this answers (msg-…): the sender's wait, collab status and the dashboard see it as the answer"`
	// ExpireAfter asks for a delivery report if nobody claims it in time.
	ExpireAfter string `json:"expire_after,omitempty" jsonschema:"if no agent claims the message within this long (10m, 2h; at most 24h) you get a delivery report that it expired (default: the channel's setting, else never)"`
}

// SendResult is what channel_send returns.
type SendResult struct {
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	// Queued is true when the bridge of a remote host cannot be reached:
	// the message waits, signed, in the host's outbox and goes out with
	// the next post or `collab outbox flush`.
	Queued bool `json:"queued,omitempty" jsonschema:"the bridge cannot be reached now: the message waits in this host's outbox and is sent later"`
}

// ReadArgs are channel_read's and channel_peek's arguments.
type ReadArgs struct {
	Since string `json:"since,omitempty" jsonschema:"only messages after this one: a message id or an ISO-8601 timestamp"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many messages, the newest (default 50, at most 500)"`
}

// ReadResult is what channel_read and channel_peek return.
type ReadResult struct {
	Channel  string    `json:"channel"`
	Messages []Message `json:"messages"`
	// More is true when older messages after since were left out by limit.
	More bool `json:"more,omitempty"`
}

func addChannelTools(s *Server) error {
	addTool(s, "channel_send", "Post a message to the channel as this agent.", s.channelSend)
	addTool(s, "channel_read", "Read the channel's messages, oldest first (the newest `limit` after `since`).",
		func(ctx context.Context, in ReadArgs) (ReadResult, error) { return s.channelRead(ctx, in, true) })
	addTool(s, "channel_peek", "Like channel_read, but marks nothing as read.",
		func(ctx context.Context, in ReadArgs) (ReadResult, error) { return s.channelRead(ctx, in, false) })
	return nil
}

func (s *Server) channelSend(ctx context.Context, in SendArgs) (SendResult, error) {
	m, queued, err := s.post(ctx, in.Message, in.To, func(r *service.PostRequest) {
		r.Priority, r.InReplyTo, r.ExpireAfter = in.Priority, in.InReplyTo, in.ExpireAfter
	})
	if err != nil {
		return SendResult{}, err
	}
	return SendResult{ID: m.ID, Timestamp: m.Timestamp, Queued: queued}, nil
}

// actor is who the tools act as: the server's agent, with its key and
// the depth of the message it answers.
func (s *Server) actor() service.Actor {
	return service.Actor{Name: s.cfg.Agent, Signer: s.cfg.Signer, Hops: s.cfg.Hops, Mode: channel.ModeMCP}
}

// post posts a message from the agent on the server's channel.
func (s *Server) post(ctx context.Context, text, to string, extra func(*service.PostRequest)) (*channel.Message, bool, error) {
	return s.postTo(ctx, s.cfg.Channel, text, to, extra)
}

// postTo is post on channel ch (a delegated session's). queued reports a
// message kept in a remote host's outbox (see SendResult.Queued).
func (s *Server) postTo(ctx context.Context, ch, text, to string, extra func(*service.PostRequest)) (*channel.Message, bool, error) {
	req := service.PostRequest{Channel: ch, To: to, Text: text, Host: s.cfg.Host}
	if extra != nil {
		extra(&req)
	}
	res, err := s.svc.Post(ctx, s.actor(), req)
	if res.Queued {
		s.cfg.Logger.Warn("sent to the outbox only", keyMsg, res.Message.ID, keyErr, err)
		return &res.Message, true, nil
	}
	if err != nil {
		if errkind.Is(err, errkind.Invalid) {
			return nil, false, err
		}
		return nil, false, fmt.Errorf("send: %w", err)
	}
	return &res.Message, false, nil
}

func (s *Server) channelRead(ctx context.Context, in ReadArgs, ack bool) (ReadResult, error) {
	limit := in.Limit
	switch {
	case limit < 0:
		return ReadResult{}, errors.New("limit must not be negative")
	case limit == 0:
		limit = DefaultReadLimit
	case limit > MaxReadLimit:
		limit = MaxReadLimit
	}
	// Names before since are left unread; the newest limit after it are
	// read, newest first.
	page, err := s.svc.Read(ctx, service.ReadRequest{Channel: s.cfg.Channel, Since: in.Since, Limit: limit, EmptyIfMissing: true})
	if errkind.Is(err, errkind.Invalid) {
		return ReadResult{}, err
	}
	if err != nil {
		return ReadResult{}, fmt.Errorf("read channel: %w", err)
	}
	for _, id := range page.Omitted {
		s.cfg.Logger.Warn("a message too big for a bridge reply is left out", keyMsg, id)
	}
	msgs, more := page.Messages, page.More
	res := ReadResult{Channel: s.cfg.Channel, Messages: []Message{}, More: more}
	for i := range msgs {
		res.Messages = append(res.Messages, s.view(&msgs[i]))
	}
	if ack && len(msgs) > 0 {
		for _, f := range s.afterRead {
			if err := f(ctx, msgs[len(msgs)-1]); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}
