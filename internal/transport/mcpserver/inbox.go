package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
)

// InboxArgs are inbox_check's and inbox_peek's arguments: none.
type InboxArgs struct{}

// InboxItem is one unread message for the agent.
type InboxItem struct {
	Priority string  `json:"priority"` // high, normal or low
	Message  Message `json:"message"`
}

// InboxResult is what inbox_check and inbox_peek return.
type InboxResult struct {
	Channel string      `json:"channel"`
	Unread  []InboxItem `json:"unread"`
}

// InboxAckArgs are inbox_ack's arguments.
type InboxAckArgs struct {
	Until string `json:"until" jsonschema:"acknowledge the messages up to and including this one: a message id (msg-…, best) or an RFC 3339 time (2026-01-11T16:33:15Z)"`
}

// InboxAckResult is what inbox_ack returns.
type InboxAckResult struct {
	// Acknowledged is how many unread messages for the agent were
	// acknowledged.
	Acknowledged int `json:"acknowledged"`
}

// addInboxTools registers the inbox tools and makes channel_read
// acknowledge what it returned.
func addInboxTools(s *Server) error {
	addTool(s, "inbox_check", "Show the unread messages addressed to this agent (to it, @mentioning it, or starting with its name), high priority first (each priority oldest first), "+
		"with their priority, and mark them as read.",
		func(ctx context.Context, _ InboxArgs) (InboxResult, error) { return s.unread(ctx, false) })
	addTool(s, "inbox_peek", "Like inbox_check, but marks nothing as read.",
		func(ctx context.Context, _ InboxArgs) (InboxResult, error) { return s.unread(ctx, true) })
	addTool(s, "inbox_ack", "Mark this agent's messages as read up to a message id or a time, without showing them.",
		func(ctx context.Context, in InboxAckArgs) (InboxAckResult, error) {
			if in.Until == "" {
				return InboxAckResult{}, errors.New("until is required: a message id or an RFC 3339 time")
			}
			a, err := s.ackInbox(ctx, in.Until)
			if errkind.Is(err, errkind.NotFound) {
				return InboxAckResult{}, fmt.Errorf("no message %s in channel %s", in.Until, s.cfg.Channel)
			}
			return InboxAckResult{Acknowledged: a.N}, err
		})
	// What channel_read shows the model counts as read, as in seed 000;
	// channel_peek leaves the inbox alone.
	s.afterRead = append(s.afterRead, func(ctx context.Context, last channel.Message) error {
		if _, err := s.ackInbox(ctx, last.ID); err != nil {
			return fmt.Errorf("the messages were read but not marked as read in the inbox: %w", err)
		}
		return nil
	})
	return nil
}

// unread is the agent's inbox on its channel; peek acknowledges nothing.
func (s *Server) unread(ctx context.Context, peek bool) (InboxResult, error) {
	r, err := s.svc.Inbox(ctx, service.InboxRequest{Agent: s.cfg.Agent, Channels: []string{s.cfg.Channel}, Peek: peek})
	if err != nil {
		return InboxResult{}, fmt.Errorf("inbox: %w", err)
	}
	for _, n := range r.Notes {
		s.cfg.Logger.Warn(n)
	}
	res := InboxResult{Channel: s.cfg.Channel, Unread: []InboxItem{}}
	for _, it := range r.Items {
		res.Unread = append(res.Unread, InboxItem{Priority: string(it.Priority), Message: s.view(&it.Message)})
	}
	return res, nil
}

func (s *Server) ackInbox(ctx context.Context, until string) (service.Acked, error) {
	return s.svc.AckInbox(ctx, service.AckRequest{Agent: s.cfg.Agent, Channels: []string{s.cfg.Channel}, Until: until})
}
