package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"collab/channel"
	"collab/internal/plumbing/safedir"
	"collab/internal/plumbing/tree"
	"collab/internal/transport/bridge"
)

// InboxDir holds a remote host's inbox cursors, under the state dir:
// STATE/inbox/CHANNEL.json, {"after": ID}, the newest message of the
// channel (in the channel's order) the agent acknowledged. It is this
// host's own state, as ROOT/state/AGENT/inbox is a mounted host's; the
// messages come from the bridge's read op.
//
// Unlike the mounted inbox's cursor (a set of names and a floor), this
// cursor is one position: a message named before it that reaches the
// mount after it (its writer's clock behind) is not shown here.
const InboxDir = "inbox"

// maxInboxPages bounds one Unread: pages of bridge.MaxReadLimit messages.
const maxInboxPages = 200

type inboxCursor struct {
	After string    `json:"after"`
	Saved time.Time `json:"saved"`
}

// Unread returns the messages of ch after the agent's cursor (all of the
// channel's when there is none), oldest first, with the id of the last
// message read (for [Client.Ack]; "" when none), and the messages left
// out as too big for a reply. It reads at most maxInboxPages pages.
func (c *Client) Unread(ctx context.Context, ch string) (msgs []channel.Message, last string, omitted []bridge.Omitted, err error) {
	if err := tree.CheckName("channel", ch); err != nil {
		return nil, "", nil, err
	}
	after, err := c.inboxCursor(ch)
	if err != nil {
		return nil, "", nil, err
	}
	if after == "" {
		// Before every message: the whole channel, page by page.
		after = channel.NewID("a", time.Unix(0, 0), "0000")
	}
	for range maxInboxPages {
		page, err := c.Read(ctx, ch, after, bridge.MaxReadLimit)
		if err != nil {
			return nil, "", nil, err
		}
		msgs = append(msgs, page.Messages...)
		omitted = append(omitted, page.Omitted...)
		if page.Last != "" {
			after, last = page.Last, page.Last
		}
		if !page.More || page.Last == "" {
			return msgs, last, omitted, nil
		}
	}
	return msgs, last, omitted, nil
}

// Ack moves the agent's cursor of ch to the message id (written
// atomically).
func (c *Client) Ack(ch, id string) error {
	if err := tree.CheckName("channel", ch); err != nil {
		return err
	}
	if _, err := channel.ParseID(id); err != nil {
		return err
	}
	data, err := json.MarshalIndent(inboxCursor{After: id, Saved: c.cfg.Now().UTC()}, "", "  ")
	if err != nil {
		return err
	}
	d, err := safedir.Create(filepath.Join(c.cfg.StateDir, InboxDir))
	if err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	defer d.Close()
	if err := d.Replace(ch+".json", append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	return nil
}

func (c *Client) inboxCursor(ch string) (string, error) {
	d, err := safedir.Open(filepath.Join(c.cfg.StateDir, InboxDir))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("inbox: %w", err)
	}
	defer d.Close()
	data, _, err := d.ReadFile(ch+".json", 4096)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("inbox: %w", err)
	}
	var cur inboxCursor
	if err := json.Unmarshal(data, &cur); err != nil {
		return "", fmt.Errorf("inbox: cursor %s/%s.json: %w", d.Path(), ch, err)
	}
	if _, err := channel.ParseID(cur.After); err != nil {
		return "", fmt.Errorf("inbox: cursor %s/%s.json: %w", d.Path(), ch, err)
	}
	return cur.After, nil
}
