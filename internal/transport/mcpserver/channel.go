package mcpserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"collab/channel"
	"collab/internal/plumbing/tree"
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
	// Verdict is the check of the message's signature against the
	// keyring: verified, unsigned, bad-signature, unknown-key or
	// revoked-key.
	Verdict string `json:"verdict" jsonschema:"the check of the sender's signature: verified, unsigned, bad-signature, unknown-key or revoked-key"`
}

func (s *Server) view(m *channel.Message) Message {
	v := Message{
		ID: m.ID, Timestamp: m.Timestamp, From: m.From, To: m.To, Type: m.Type,
		Text: m.Content.Text, InReplyTo: m.Metadata.InReplyTo, Mentioned: m.IsFor(s.cfg.Agent),
		Verdict: m.Verify(s.cfg.Verifier, s.cfg.Channel).String(),
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
}

// SendResult is what channel_send returns.
type SendResult struct {
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
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
	m, err := s.post(ctx, in.Message, in.To, nil)
	if err != nil {
		return SendResult{}, err
	}
	return SendResult{ID: m.ID, Timestamp: m.Timestamp}, nil
}

// post writes a message from the agent, then announces it.
func (s *Server) post(ctx context.Context, text, to string, extra func(*channel.Message)) (*channel.Message, error) {
	return s.postTo(ctx, s.cfg.Channel, text, to, extra)
}

// postTo is post on channel ch (a delegated session's).
func (s *Server) postTo(ctx context.Context, ch, text, to string, extra func(*channel.Message)) (*channel.Message, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("message is empty")
	}
	if to == "" {
		to = channel.Broadcast
	}
	if to != channel.Broadcast {
		if err := tree.CheckName("recipient", to); err != nil {
			return nil, err
		}
	}
	m := &channel.Message{
		SessionID: ch,
		From:      s.cfg.Agent,
		To:        to,
		Content:   channel.Content{Text: text},
		Metadata:  channel.Metadata{Host: s.cfg.Host, Mode: channel.ModeMCP},
	}
	if s.cfg.Hops >= 0 {
		m.Metadata.Hops = s.cfg.Hops + 1
	}
	if extra != nil {
		extra(m)
	}
	w := &channel.Writer{Root: s.cfg.Root, Now: s.cfg.Now, Signer: s.cfg.Signer}
	if err := w.Post(m); err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	if s.cfg.Publish != nil {
		if err := s.cfg.Publish(ctx, m); err != nil {
			s.cfg.Logger.Warn("sent as a file only", keyMsg, m.ID, keyErr, err)
		}
	}
	return m, nil
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
	var msgs []channel.Message
	if in.Since == "" {
		// The tail only: read limit+1 files, not the whole channel.
		var err error
		if msgs, err = channel.Recent(s.cfg.Root, s.cfg.Channel, "", limit+1); err != nil {
			return ReadResult{}, fmt.Errorf("read channel: %w", err)
		}
	} else {
		keep, accept, err := s.since(in.Since)
		if err != nil {
			return ReadResult{}, err
		}
		// Names before since are left unread; the newest limit+1 after it
		// are read, newest first.
		if msgs, _, _, err = channel.Newest(s.cfg.Root, s.cfg.Channel, limit+1, keep, accept); err != nil {
			return ReadResult{}, fmt.Errorf("read channel: %w", err)
		}
	}
	res := ReadResult{Channel: s.cfg.Channel, Messages: []Message{}}
	if len(msgs) > limit {
		msgs, res.More = msgs[len(msgs)-limit:], true
	}
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

// sinceMargin is how far before since a message may be named and still be
// looked at for a timestamp after since (a writer whose name and timestamp
// disagree); names further back are not read.
const sinceMargin = time.Minute

// since returns the filters, for [channel.Newest], of the messages after
// since: a message id (everything after that message in channel order) or
// a timestamp (messages whose time is after it).
func (s *Server) since(arg string) (func(string, channel.Name) bool, func(*channel.Message) bool, error) {
	if n, err := channel.ParseID(arg); err == nil {
		if m, err := channel.Lookup(s.cfg.Root, s.cfg.Channel, arg); err == nil {
			// In channel order: the name's second, then the timestamp,
			// then the file name.
			at, ts := n.Time, m.Time()
			keep := func(_ string, nm channel.Name) bool { return !nm.Time.Before(at) }
			return keep, func(o *channel.Message) bool {
				on, _ := channel.ParseName(o.File)
				return cmp.Or(on.Time.Compare(at), o.Time().Compare(ts), strings.Compare(o.File, m.File)) > 0
			}, nil
		}
		return channel.After(n.Time, sinceMargin), func(o *channel.Message) bool { return o.Time().After(n.Time) }, nil
	}
	t, err := parseTime(arg)
	if err != nil {
		return nil, nil, fmt.Errorf("since %q is neither a message id nor an ISO-8601 timestamp", arg)
	}
	return channel.After(t, sinceMargin), func(o *channel.Message) bool { return o.Time().After(t) }, nil
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("bad time")
}
