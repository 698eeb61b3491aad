// Package delegate waits for the answer to a message: the first message of
// the same channel whose metadata.in_reply_to is its id. It is how an agent
// hands work to another and blocks until it is done (collab send --wait,
// collab wait, the MCP tool send_and_wait).
//
// # How it waits
//
// Polling the channel folder is the truth ([channel.Reader], so an idle
// wait costs one fstat of the folder per poll); a name received on
// [Options.Wake] (a NATS announcement) is read at once, without waiting for
// the next poll. A reply already in the channel when the wait starts is
// found by the first scan. Replies are looked for among messages named no
// more than [channel.DefaultSkewWindow] before the request, so a reply from
// a host whose clock is behind is still found. A sender that waits on its
// own message ([Before], then [WaitWith]) lists the channel before posting
// it and reads none of the messages already there.
//
// # Trust
//
// A reply is taken only when the trust policy ([Options.Trust], default
// known, as the watcher's --trust) accepts the verdict on its signature
// ([signing.Verifier.Accepts]), checked against the channel it was read
// from: under known, a reply in the name of an agent with trusted keys
// must verify as that agent, so a group member who posts a reply in a
// keyed agent's name does not end the wait. Such a reply is passed to
// [Options.Forged] and the wait goes on for the real one. Only messages
// that would otherwise be the reply are checked.
//
// # Bounds
//
// The caller bounds the wait with its context; [Wait] returns the context's
// error (context.DeadlineExceeded on a timeout). Delegation chains are
// bounded by the hop count: a message sent from inside a watcher's model
// run carries that run's COLLAB_HOPS plus one, and watchers do not answer
// messages at their --max-hops (they post a notice in reply instead, which
// ends the wait).
package delegate

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// DefaultPoll is how often the channel is looked at.
const DefaultPoll = time.Second

// Options tune Wait; the zero value waits for any reply, polling every
// DefaultPoll.
type Options struct {
	// From, if set, accepts only a reply from this agent.
	From string
	// NotFrom, if set, ignores replies from this agent (the asker itself).
	NotFrom string
	// Poll is how often the channel is scanned; default DefaultPoll.
	Poll time.Duration
	// Wake carries names of message files announced elsewhere (NATS); each
	// is read at once. May be nil.
	Wake <-chan string
	// Reader tunes the channel reader (its clock, size limit).
	Reader channel.ReaderOptions
	// Skip, if set, leaves out a message that would otherwise be the
	// reply (collab send --wait skips guard notices: its delivery status
	// says when the message is refused). It sees only replies the trust
	// policy accepts.
	Skip func(m *channel.Message) bool
	// Trust is the policy a reply must pass (see the package doc); ""
	// is signing.DefaultPolicy.
	Trust signing.Policy
	// Verifier checks replies' signatures. Nil trusts no key: under
	// known every reply is taken at its word, under signed none is.
	Verifier *signing.Verifier
	// Forged, if set, is told of each reply the trust policy refused,
	// with the verdict on it; the wait goes on.
	Forged func(m *channel.Message, v signing.Verdict)
}

// Wait blocks until the reply to message id of channel ch arrives and
// returns it, or until ctx ends.
func Wait(ctx context.Context, root tree.Root, ch, id string, opt Options) (channel.Message, error) {
	name, err := channel.ParseID(id)
	if err != nil {
		return channel.Message{}, fmt.Errorf("wait for a reply: message id %q: %w", id, err)
	}
	for _, n := range []struct{ kind, v string }{{"agent", opt.From}, {"agent", opt.NotFrom}} {
		if n.v != "" {
			if err := tree.CheckName(n.kind, n.v); err != nil {
				return channel.Message{}, fmt.Errorf("wait for a reply: %w", err)
			}
		}
	}
	cur := channel.Cursor{Floor: name.Time.Add(-channel.DefaultSkewWindow)}
	r, err := channel.NewReader(root, ch, cur, opt.Reader)
	if err != nil {
		return channel.Message{}, fmt.Errorf("wait for a reply: %w", err)
	}
	return WaitWith(ctx, r, id, opt)
}

// Before returns the reader for a wait on a message about to be posted to
// ch, to give to [WaitWith] once it is: it lists the channel now and marks
// every message there as looked at, without reading any (none of them can
// answer a message not yet written), so the wait reads only what arrives
// after, however long the channel. A reply from a host whose clock is
// behind, named up to the skew window before the request, is still found.
func Before(root tree.Root, ch string, opt Options) (*channel.Reader, error) {
	now := time.Now
	if opt.Reader.Now != nil {
		now = opt.Reader.Now
	}
	skew := opt.Reader.SkewWindow
	if skew <= 0 {
		skew = channel.DefaultSkewWindow
	}
	r, err := channel.NewReader(root, ch, channel.Cursor{Floor: now().Add(-skew).Truncate(time.Second)}, opt.Reader)
	if err != nil {
		return nil, fmt.Errorf("wait for a reply: %w", err)
	}
	if err := r.SeekEnd(); err != nil {
		return nil, fmt.Errorf("wait for a reply: %w", err)
	}
	return r, nil
}

// WaitWith is [Wait] with the channel's reader r, from [Before].
func WaitWith(ctx context.Context, r *channel.Reader, id string, opt Options) (channel.Message, error) {
	poll := opt.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var lastErr error
	for {
		msgs, _, err := r.Scan()
		if err != nil {
			lastErr = err // the mount may come back: keep waiting
		}
		for _, m := range msgs {
			if opt.isReply(&m, r.Channel(), id) {
				return m, nil
			}
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return channel.Message{}, fmt.Errorf("%w (last error: %v)", ctx.Err(), lastErr)
			}
			return channel.Message{}, ctx.Err()
		case <-tick.C:
		case file := <-opt.Wake:
			r.Hint(file)
		}
	}
}

// IsReply reports whether m, read from the channel its session_id names
// (a stream subject's, checked by natsbus.Decode), answers message id as
// opt allows: its From, NotFrom, trust policy and Skip. A reply the
// policy refuses is passed to opt.Forged.
func (opt Options) IsReply(m *channel.Message, id string) bool {
	return opt.isReply(m, m.SessionID, id)
}

// isReply is IsReply for m read from channel ch.
func (opt Options) isReply(m *channel.Message, ch, id string) bool {
	if m.Metadata.InReplyTo != id || m.IsQuestion() || m.IsDeliveryReport() {
		return false // a question asked mid-run, or a delivery report, is not the answer
	}
	if opt.From != "" && m.From != opt.From {
		return false
	}
	if opt.NotFrom != "" && m.From == opt.NotFrom {
		return false
	}
	if v, ok := opt.Judge(m, ch); !ok {
		if opt.Forged != nil {
			opt.Forged(m, v)
		}
		return false
	}
	return opt.Skip == nil || !opt.Skip(m)
}

// Judge returns the verdict on m's signature, m read from channel ch, and
// whether opt's trust policy takes m as a reply: what a waiter prints
// with the reply it returns.
func (opt Options) Judge(m *channel.Message, ch string) (signing.Verdict, bool) {
	trust := cmp.Or(opt.Trust, signing.DefaultPolicy)
	v := m.Verify(opt.Verifier, ch)
	return v, opt.Verifier.Accepts(trust, m.From, v)
}
