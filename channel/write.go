package channel

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"collab/internal/identity/signing"
	"collab/internal/plumbing/randhex"
	"collab/internal/plumbing/safedir"
	"collab/internal/plumbing/tree"
)

// ErrTooLarge is returned when a message is larger than the size limit.
var ErrTooLarge = errors.New("channel: message too large")

// maxNameTries bounds the search for a free name; it is only reached when a
// second's 65,536 names are nearly all taken.
const maxNameTries = 1000

// Writer posts messages into a tree. The zero value of each field but Root
// is a sensible default. A Writer is safe for concurrent use.
type Writer struct {
	Root    tree.Root
	Now     func() time.Time // default time.Now
	MaxSize int              // default MaxMessageSize
	// Signer, when set, signs every message posted (its agent must be
	// the message's sender).
	Signer *signing.Signer
}

// Post fills in m's id, timestamp and defaults (to "all", type "chat", mode
// "chat", turn = from) and publishes it atomically into the channel named by
// m.SessionID, creating the channel folder if needed. If m.ID is empty a new
// one is chosen, and a clash with an existing name picks a new one; if m.ID
// is set, a clash is an error that wraps fs.ErrExist.
func (w *Writer) Post(m *Message) error {
	if err := tree.CheckName("channel", m.SessionID); err != nil {
		return err
	}
	if err := tree.CheckName("agent", m.From); err != nil {
		return err
	}
	if m.To == "" {
		m.To = Broadcast
	}
	if m.To != Broadcast {
		if err := tree.CheckName("recipient", m.To); err != nil {
			return err
		}
	}
	if m.Type == "" {
		m.Type = "chat"
	}
	if m.Metadata.Mode == "" {
		m.Metadata.Mode = ModeChat
	}
	if m.Metadata.Turn == "" {
		m.Metadata.Turn = m.From
	}
	fixed := m.ID != ""
	if fixed {
		if _, err := ParseID(m.ID); err != nil {
			return fmt.Errorf("message id %q: %w", m.ID, err)
		}
	}
	d, err := safedir.Create(w.Root.Channel(m.SessionID))
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	defer d.Close()
	limit := w.MaxSize
	if limit <= 0 {
		limit = MaxMessageSize
	}
	now := w.Now
	if now == nil {
		now = time.Now
	}
	for range maxNameTries {
		if !fixed {
			t := now().UTC()
			m.ID = NewID(m.From, t, randhex.String(2))
			m.Timestamp = t.Format(TimeFormat)
		} else if m.Timestamp == "" {
			m.Timestamp = now().UTC().Format(TimeFormat)
		}
		if w.Signer != nil {
			if err := m.Sign(w.Signer); err != nil {
				return err
			}
		}
		data, err := m.Encode()
		if err != nil {
			return fmt.Errorf("encode message: %w", err)
		}
		if len(data) > limit {
			return fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(data), limit)
		}
		err = d.Publish(m.ID+nameSuffix, data, 0o666)
		if err == nil {
			m.File = m.ID + nameSuffix
			return nil
		}
		if fixed || !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return fmt.Errorf("channel %s: no free message name after %d tries", m.SessionID, maxNameTries)
}
