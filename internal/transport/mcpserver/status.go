package mcpserver

import (
	"context"
	"fmt"

	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
)

// StatusArgs are message_status's arguments.
type StatusArgs struct {
	ID       string `json:"id" jsonschema:"the message's id (as channel_send returned it)"`
	Timeline bool   `json:"timeline,omitempty" jsonschema:"also each addressee's timeline: the time of every stage (sent, visible, seen, claimed, run_started, first_output, replied, …)"`
}

func addStatusTool(s *Server) error {
	addTool(s, "message_status", "Show where a message stands for each agent it is addressed to: "+
		"waiting, seen, claimed, running, answered (reply id), refused (which guard), failed (the error) or undeliverable.", s.messageStatus)
	return nil
}

// errNoMessage is message_status's answer for a message its channel does
// not hold: the same whether another channel holds it or none does, so a
// session learns nothing of the channels it cannot reach.
var errNoMessage = errkind.New(errkind.NotFound, "no such message in this channel")

// messageStatus looks for the message in the session's channel only, as
// every tool acts on that channel alone.
func (s *Server) messageStatus(ctx context.Context, in StatusArgs) (delivery.Status, error) {
	st, err := s.svc.Status(ctx, service.StatusRequest{Channel: s.cfg.Channel, ID: in.ID, Timeline: in.Timeline})
	if errkind.Is(err, errkind.NotFound) {
		return delivery.Status{}, fmt.Errorf("message %s: %w", in.ID, errNoMessage)
	}
	return st, err
}
