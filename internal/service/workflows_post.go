package service

import (
	"context"
	"fmt"

	"github.com/collabdev/collab/channel"
)

// postKickoff posts the rendered kickoff into the instance's channel (in
// its store) as the team's From (Mount.Post: signed, one hop deeper than the message it
// answers, announced when the mount publishes).
func (t *team) postKickoff(ctx context.Context) (*channel.Message, error) {
	res, err := t.sm.Post(ctx, t.from, PostRequest{Channel: t.channel, Text: t.kickoff})
	if err != nil {
		return nil, fmt.Errorf("kickoff: %w", err)
	}
	return &res.Message, nil
}
