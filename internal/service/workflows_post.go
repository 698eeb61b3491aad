package service

import (
	"context"
	"fmt"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
)

// postKickoff posts the rendered kickoff into the instance's channel as
// the team's From, one hop deeper than the message it answers.
//
// TODO(i24 merge): Mount.Post — post through the layer's one post
// operation (signing, metadata, the NATS announcement) once it exists.
func (t *team) postKickoff(ctx context.Context) (*channel.Message, error) {
	m := &channel.Message{SessionID: t.channel, From: t.from.Name, To: channel.Broadcast, Content: channel.Content{Text: t.kickoff}}
	m.Metadata.Host = t.m.cfg.Host
	m.Metadata.Hops = t.from.Hops + 1
	w := &channel.Writer{Root: t.m.cfg.Root, Signer: t.from.Signer}
	if err := w.Post(m); err != nil {
		return nil, errkind.Wrap(errkind.Failed, fmt.Errorf("kickoff: %w", err))
	}
	if t.m.cfg.Publish != nil {
		if err := t.m.cfg.Publish(ctx, m); err != nil {
			t.m.cfg.Logger.Warn("kickoff not announced", "channel", t.channel, "err", err)
		}
	}
	return m, nil
}
