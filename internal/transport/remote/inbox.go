package remote

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/workspace/inbox"
)

// InboxDir holds a remote host's inbox cursors, under the state dir:
// STATE/inbox/CHANNEL.json, one [channel.Cursor] per channel, the kind the
// mounted inbox keeps (package inbox): the set of message names the agent
// acknowledged plus a floor below which everything is, the floor trailing
// the newest acknowledged name by [channel.DefaultSkewWindow]. The file is
// package inbox's cursor file ([inbox.ReadCursor], [inbox.WriteCursor]),
//
//	{"version": 1, "saved": TIME, "cursor": {"floor": TIME, "seen": [NAME...]}}
//
// rewritten atomically. A file of the first format, {"after": ID} (one
// position), is read as the floor at ID's time with ID acknowledged. It is
// this host's own state, as ROOT/state/AGENT/inbox is a mounted host's;
// the messages come from the bridge's read op.
const InboxDir = "inbox"

// maxInboxPages bounds one Unread: pages of bridge.MaxReadLimit messages.
const maxInboxPages = 200

// Unread returns the messages of ch this host has not acknowledged for
// the agent, in channel order (oldest first), and the stand-ins of those
// too big for a bridge reply. It reads from the cursor's floor on (pages
// of the bridge's read op), at most maxInboxPages pages.
func (c *Client) Unread(ctx context.Context, ch string) (msgs []channel.Message, omitted []bridge.Omitted, err error) {
	if err := tree.CheckName("channel", ch); err != nil {
		return nil, nil, err
	}
	cur, err := c.inboxCursor(ch)
	if err != nil {
		return nil, nil, err
	}
	unread := cur.Unread()
	err = c.pages(ctx, ch, cur.Floor, func(p Page) bool {
		for _, m := range p.Messages {
			if isUnread(unread, m.ID) {
				msgs = append(msgs, m)
			}
		}
		for _, o := range p.Omitted {
			if isUnread(unread, o.ID) {
				omitted = append(omitted, o)
			}
		}
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	return msgs, omitted, nil
}

// Inbox returns what of Unread is for the client's agent
// (channel.Message.IsFor) as inbox items, in channel order, the stand-ins
// of messages too big for a reply, and the ids of every message looked at,
// for [Client.Acknowledge] (as inbox.Check acknowledges what it looked
// at, stand-ins included).
func (c *Client) Inbox(ctx context.Context, ch string) (items []inbox.Item, omitted []bridge.Omitted, looked []string, err error) {
	msgs, omitted, err := c.Unread(ctx, ch)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, o := range omitted {
		if _, err := channel.ParseID(o.ID); err == nil {
			looked = append(looked, o.ID)
		}
	}
	for i := range msgs {
		looked = append(looked, msgs[i].ID)
		if msgs[i].IsFor(c.cfg.Agent) {
			items = append(items, inbox.Item{Channel: ch, Priority: inbox.PriorityOf(&msgs[i]), Message: msgs[i]})
		}
	}
	return items, omitted, looked, nil
}

// isUnread applies a cursor's test to a message id; an id that is not one
// (a stand-in's, from the bridge) counts as unread.
func isUnread(unread func(string, channel.Name) bool, id string) bool {
	nm, err := channel.ParseID(id)
	return err != nil || unread(id+".json", nm)
}

// pages reads ch through the bridge from the messages named at from on
// (the second before it, so that none of from's second is missed), page
// after page, while each returns true, at most maxInboxPages pages.
func (c *Client) pages(ctx context.Context, ch string, from time.Time, each func(Page) bool) error {
	start := from.Add(-time.Second)
	if epoch := time.Unix(0, 0); start.Before(epoch) {
		start = epoch
	}
	after := channel.NewID("a", start, "0000")
	for range maxInboxPages {
		p, err := c.Read(ctx, ch, after, bridge.MaxReadLimit)
		if err != nil {
			return err
		}
		if !each(p) || !p.More || p.Last == "" {
			return nil
		}
		after = p.Last
	}
	return nil
}

// Acknowledge adds exactly these message ids of ch to the cursor (an
// atomic rewrite), moving the floor as the mounted inbox does.
func (c *Client) Acknowledge(ch string, ids []string) error {
	if err := tree.CheckName("channel", ch); err != nil {
		return err
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		if _, err := channel.ParseID(id); err != nil {
			return fmt.Errorf("inbox: acknowledge: %w", err)
		}
		names[i] = id + ".json"
	}
	old, err := c.inboxCursor(ch)
	if err != nil {
		return err
	}
	cur := old.Add(channel.ReaderOptions{Now: c.cfg.Now}, names...)
	if old.Floor.Equal(cur.Floor) && slices.Equal(old.Seen, cur.Seen) {
		return nil
	}
	return inbox.WriteCursor(filepath.Join(c.cfg.StateDir, InboxDir), ch, cur, c.cfg.Now(), 0o600)
}

// AckUntil acknowledges every message of ch now on the mount up to and
// including id in channel order (read through the bridge, from the
// cursor's floor or id's time, whichever is earlier) and returns how many
// of them were unread and for the agent. An id not in the channel is an
// error wrapping [inbox.ErrUnknownMessage].
//
// Unlike the mounted inbox's Ack it has no guard on arrival times (the
// bridge does not send them): a message that sorts before id but reached
// the mount after it is acknowledged too.
func (c *Client) AckUntil(ctx context.Context, ch, id string) (int, error) {
	if err := tree.CheckName("channel", ch); err != nil {
		return 0, err
	}
	an, err := channel.ParseID(id)
	if err != nil {
		return 0, fmt.Errorf("inbox: ack until: %w", err)
	}
	cur, err := c.inboxCursor(ch)
	if err != nil {
		return 0, err
	}
	unread := cur.Unread()
	var ids []string
	n, found, more := 0, false, false
	err = c.pages(ctx, ch, earlier(cur.Floor, an.Time), func(p Page) bool {
		more = p.More
		// Messages and stand-ins each keep channel order; the id is
		// found in one of them, and what follows it there is left. Of
		// the other, only those named in an earlier second surely come
		// before it (a stand-in has no timestamp to order it by within
		// the second): the rest are left unread, to be shown again.
		i := slices.IndexFunc(p.Messages, func(m channel.Message) bool { return m.ID == id })
		j := slices.IndexFunc(p.Omitted, func(o bridge.Omitted) bool { return o.ID == id })
		msgs, omitted := p.Messages, p.Omitted
		switch {
		case i >= 0:
			msgs = msgs[:i+1]
			omitted = slices.DeleteFunc(slices.Clone(omitted), func(o bridge.Omitted) bool { return !namedBefore(o.ID, an.Time) })
		case j >= 0:
			omitted = omitted[:j+1]
			msgs = slices.DeleteFunc(slices.Clone(msgs), func(m channel.Message) bool { return !namedBefore(m.ID, an.Time) })
		}
		for _, m := range msgs {
			if isUnread(unread, m.ID) && m.IsFor(c.cfg.Agent) {
				n++
			}
			ids = append(ids, m.ID)
		}
		for _, o := range omitted {
			if _, err := channel.ParseID(o.ID); err == nil {
				ids = append(ids, o.ID)
			}
		}
		found = i >= 0 || j >= 0
		return !found
	})
	switch {
	case err != nil:
		return 0, fmt.Errorf("inbox: ack until %s: %w", id, err)
	case !found && more:
		return 0, fmt.Errorf("inbox: ack until %s: not within %d pages of channel %s", id, maxInboxPages, ch)
	case !found:
		return 0, fmt.Errorf("%w: %s in %s", inbox.ErrUnknownMessage, id, ch)
	}
	if err := c.Acknowledge(ch, ids); err != nil {
		return 0, err
	}
	return n, nil
}

// namedBefore reports whether id is a message id named before t's second.
func namedBefore(id string, t time.Time) bool {
	n, err := channel.ParseID(id)
	return err == nil && n.Time.Before(t)
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func (c *Client) inboxCursor(ch string) (channel.Cursor, error) {
	cur, err := inbox.ReadCursor(filepath.Join(c.cfg.StateDir, InboxDir), ch)
	if err != nil {
		return channel.Cursor{}, fmt.Errorf("inbox: %w", err)
	}
	return cur, nil
}
