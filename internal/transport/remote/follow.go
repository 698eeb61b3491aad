package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// followMargin is how far before its start time Follow asks the stream
// for messages: the stream's times are the server's, the ids' the
// writers'; the ids seen are dropped anyway.
const followMargin = 5 * time.Second

// maxSeen bounds the ids Follow remembers to drop repeats.
const maxSeen = 10000

// followWait is how often Follow reads the stream without a hint.
const followWait = time.Second

// Follow calls fn with each new message of ch in the CHAT stream from
// start on, in the stream's order, until ctx ends (nil) or fn fails (its
// error). Messages whose ids are in seen, or that were delivered already,
// are dropped. The stream is read with direct gets (streamReader: nothing
// of the agent's on the server), from start, then after the last message
// handed on, each followWait and at once when a message of ch is
// published; a failure after the first read is retried.
func (c *Client) Follow(ctx context.Context, ch string, start time.Time, seen []string, fn func(channel.Message) error) error {
	if err := tree.CheckName("channel", ch); err != nil {
		return fmt.Errorf("follow: %w", err)
	}
	if c.cfg.Stream == nil {
		return errors.New("follow: no stream connection")
	}
	from := start.Add(-followMargin)
	r, err := newStreamReader(c.cfg.Stream, []string{ch}, c.cfg.Timeout)
	if err != nil {
		return fmt.Errorf("follow %s: %w", ch, err)
	}
	defer r.close()
	if _, err := r.info(ctx); err != nil {
		return fmt.Errorf("follow %s: %w", ch, err)
	}
	d := newDedup(maxSeen)
	for _, id := range seen {
		d.add(id)
	}
	var next uint64 // the stream sequence after the last message handed on
	for ctx.Err() == nil {
		var fnErr error
		found := false
		last, err := r.read(ctx, ch, next, from, 0, func(sm *natsbus.StoredMsg) error {
			found = true
			m, err := natsbus.Decode(sm.Subject, sm.Header, sm.Data)
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
		if last > 0 {
			next = last + 1
		}
		if fnErr != nil {
			return fnErr
		}
		if err != nil && ctx.Err() == nil {
			c.cfg.Logger.Debug("follow: read", "channel", ch, "err", err)
			sleep(ctx, followWait)
			continue
		}
		r.wait(ctx, followWait, found)
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
