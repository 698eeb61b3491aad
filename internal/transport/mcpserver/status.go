package mcpserver

import (
	"context"
	"fmt"

	"collab/channel"
	"collab/internal/delivery"
)

// StatusArgs are message_status's arguments.
type StatusArgs struct {
	ID string `json:"id" jsonschema:"the message's id (as channel_send returned it)"`
}

func addStatusTool(s *Server) error {
	addTool(s, "message_status", "Show where a message stands for each agent it is addressed to: "+
		"waiting, seen, claimed, running, answered (reply id), refused (which guard), failed (the error) or undeliverable.", s.messageStatus)
	return nil
}

// messageStatus looks for the message in the session's channel, then in
// every channel.
func (s *Server) messageStatus(ctx context.Context, in StatusArgs) (delivery.Status, error) {
	if _, err := channel.ParseID(in.ID); err != nil {
		return delivery.Status{}, fmt.Errorf("%q is not a message id", in.ID)
	}
	return s.store.status(ctx, s.cfg.Channel, in.ID)
}
