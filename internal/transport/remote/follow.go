package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"collab/channel"
	"collab/internal/plumbing/tree"
	"collab/internal/transport/natsbus"
)

// followMargin is how far before its start time Follow asks the stream
// for messages: the stream's times are the server's, the ids' the
// writers'; the ids seen are dropped anyway.
const followMargin = 5 * time.Second

// maxSeen bounds the ids Follow remembers to drop repeats.
const maxSeen = 10000

// followWait is how long one fetch of Follow waits for messages; a
// message is handed on as soon as it arrives.
const followWait = time.Second

// Follow calls fn with each new message of ch in the CHAT stream from
// start on, in the stream's order, until ctx ends (nil) or fn fails (its
// error). Messages whose ids are in seen, or that were delivered already,
// are dropped. The consumer is one of the agent's (streamReader): it is
// made again after a reconnect or a lost message and resumes after the
// last message handed on.
func (c *Client) Follow(ctx context.Context, ch string, start time.Time, seen []string, fn func(channel.Message) error) error {
	if err := tree.CheckName("channel", ch); err != nil {
		return fmt.Errorf("follow: %w", err)
	}
	if c.cfg.Stream == nil {
		return errors.New("follow: no stream connection")
	}
	from := start.Add(-followMargin)
	r := newStreamReader(c.cfg.Stream, c.Agent(), "follow")
	defer r.close()
	d := newDedup(maxSeen)
	for _, id := range seen {
		d.add(id)
	}
	var next uint64 // the stream sequence after the last message handed on
	var fnErr error
	for first := true; ctx.Err() == nil; first = false {
		if !r.ready() {
			cfg := jetstream.ConsumerConfig{
				FilterSubject: natsbus.ChatSubject(ch),
				DeliverPolicy: jetstream.DeliverByStartTimePolicy,
				OptStartTime:  &from,
			}
			if next > 0 {
				cfg.DeliverPolicy, cfg.OptStartTime, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, nil, next
			}
			if err := r.open(ctx, cfg); err != nil {
				if first {
					return fmt.Errorf("follow %s: stream %s: %w", ch, natsbus.StreamName, err)
				}
				c.cfg.Logger.Debug("follow: consumer", "channel", ch, "err", err)
				sleep(ctx, followWait)
				continue
			}
		}
		err := r.fetch(ctx, mirrorBatch, followWait, func(msg jetstream.Msg, meta *jetstream.MsgMetadata) error {
			next = meta.Sequence.Stream + 1
			m, err := natsbus.Decode(msg.Subject(), msg.Headers(), msg.Data())
			if err != nil {
				c.cfg.Logger.Warn("skipped a stream message", "channel", ch, "err", err)
				return nil
			}
			if !d.add(m.ID) {
				return nil
			}
			if err := fn(m); err != nil {
				fnErr = err
				return err
			}
			return nil
		})
		if fnErr != nil {
			return fnErr
		}
		if err != nil && ctx.Err() == nil {
			c.cfg.Logger.Debug("follow: fetch", "channel", ch, "err", err)
			r.drop()
			sleep(ctx, followWait)
		}
	}
	return nil
}

// dedup remembers the last n ids added.
type dedup struct {
	set  map[string]struct{}
	ring []string
	next int
}

func newDedup(n int) *dedup {
	return &dedup{set: make(map[string]struct{}, n), ring: make([]string, n)}
}

// add records id and reports whether it is new.
func (d *dedup) add(id string) bool {
	if _, ok := d.set[id]; ok {
		return false
	}
	if old := d.ring[d.next]; old != "" {
		delete(d.set, old)
	}
	d.ring[d.next] = id
	d.next = (d.next + 1) % len(d.ring)
	d.set[id] = struct{}{}
	return true
}

// errReplied stops AwaitReply's Follow.
var errReplied = errors.New("replied")

// AwaitReply follows ch on the stream from start (taken before the request
// was posted) until a message isReply accepts arrives, and returns it. The
// stream holds every message that lands on the mount (the bridge publishes
// them), in the order they arrived, so a reply from a host whose clock is
// behind is found. ctx bounds the wait: its end is ctx's error.
//
// isReply is where the waiter's trust policy applies, as on the mount
// (delegate.Options.IsReply: a reply in the name of an agent with keys
// must verify); it is given only messages whose session_id is ch, so a
// signature checked against the message's own channel is checked against
// ch.
func (c *Client) AwaitReply(ctx context.Context, ch string, start time.Time, isReply func(*channel.Message) bool) (channel.Message, error) {
	var got channel.Message
	err := c.Follow(ctx, ch, start, nil, func(m channel.Message) error {
		if m.SessionID == ch && isReply(&m) {
			got = m
			return errReplied
		}
		return nil
	})
	switch {
	case errors.Is(err, errReplied):
		return got, nil
	case err == nil:
		return channel.Message{}, ctx.Err()
	}
	return channel.Message{}, err
}
