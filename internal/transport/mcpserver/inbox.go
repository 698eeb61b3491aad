package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/workspace/inbox"
)

// InboxArgs are inbox_check's and inbox_peek's arguments: none.
type InboxArgs struct{}

// InboxItem is one unread message for the agent.
type InboxItem struct {
	Priority string  `json:"priority"` // normal or high
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
	box, err := s.store.inbox(s.cfg.Channel)
	if err != nil {
		return err
	}
	addTool(s, "inbox_check", "Show the unread messages addressed to this agent (to it, @mentioning it, or starting with its name), oldest first, "+
		"with their priority, and mark them as read.",
		func(ctx context.Context, _ InboxArgs) (InboxResult, error) {
			return s.inboxItems(box.unread(ctx, true))
		})
	addTool(s, "inbox_peek", "Like inbox_check, but marks nothing as read.",
		func(ctx context.Context, _ InboxArgs) (InboxResult, error) {
			return s.inboxItems(box.unread(ctx, false))
		})
	addTool(s, "inbox_ack", "Mark this agent's messages as read up to a message id or a time, without showing them.",
		func(ctx context.Context, in InboxAckArgs) (InboxAckResult, error) {
			if in.Until == "" {
				return InboxAckResult{}, errors.New("until is required: a message id or an RFC 3339 time")
			}
			until, err := inbox.ParseUntil(in.Until)
			if err != nil {
				return InboxAckResult{}, err
			}
			n, err := box.ack(ctx, until)
			if errors.Is(err, inbox.ErrUnknownMessage) {
				return InboxAckResult{}, fmt.Errorf("no message %s in channel %s", in.Until, s.cfg.Channel)
			}
			return InboxAckResult{Acknowledged: n}, err
		})
	// What channel_read shows the model counts as read, as in seed 000;
	// channel_peek leaves the inbox alone.
	s.afterRead = append(s.afterRead, func(ctx context.Context, last channel.Message) error {
		if _, err := box.ack(ctx, inbox.Until{ID: last.ID}); err != nil {
			return fmt.Errorf("the messages were read but not marked as read in the inbox: %w", err)
		}
		return nil
	})
	return nil
}

func (s *Server) inboxItems(items []inbox.Item, err error) (InboxResult, error) {
	if err != nil {
		return InboxResult{}, fmt.Errorf("inbox: %w", err)
	}
	res := InboxResult{Channel: s.cfg.Channel, Unread: []InboxItem{}}
	for _, it := range items {
		res.Unread = append(res.Unread, InboxItem{Priority: string(it.Priority), Message: s.view(&it.Message)})
	}
	return res, nil
}
