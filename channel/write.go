package channel

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/randhex"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
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
	fixed, err := w.prepare(m)
	if err != nil {
		return err
	}
	d, err := safedir.Create(w.Root.Channel(m.SessionID))
	if err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	defer d.Close()
	for range maxNameTries {
		data, err := w.seal(m, fixed)
		if err != nil {
			return err
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

// Seal does what Post does to m (id, timestamp, defaults, signature) and
// returns the file's contents, without writing anything: for a host that
// hands the message to another to publish (a remote client and its
// bridge). The id is chosen here, so sending the same data again names
// the same file. Root is not used.
func (w *Writer) Seal(m *Message) ([]byte, error) {
	fixed, err := w.prepare(m)
	if err != nil {
		return nil, err
	}
	data, err := w.seal(m, fixed)
	if err != nil {
		return nil, err
	}
	m.File = m.ID + nameSuffix
	return data, nil
}

// prepare checks m's names and fills in its defaults; fixed says m
// came with its id.
func (w *Writer) prepare(m *Message) (fixed bool, err error) {
	if err := tree.CheckName("channel", m.SessionID); err != nil {
		return false, err
	}
	if err := tree.CheckName("agent", m.From); err != nil {
		return false, err
	}
	if m.To == "" {
		m.To = Broadcast
	}
	if m.To != Broadcast {
		if err := tree.CheckName("recipient", m.To); err != nil {
			return false, err
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
	fixed = m.ID != ""
	if fixed {
		if _, err := ParseID(m.ID); err != nil {
			return false, fmt.Errorf("message id %q: %w", m.ID, err)
		}
	}
	return fixed, nil
}

// seal names (unless fixed), dates, signs and encodes m, within the size
// limit.
func (w *Writer) seal(m *Message, fixed bool) ([]byte, error) {
	now := w.Now
	if now == nil {
		now = time.Now
	}
	if !fixed {
		t := now().UTC()
		m.ID = NewID(m.From, t, randhex.String(2))
		m.Timestamp = t.Format(TimeFormat)
	} else if m.Timestamp == "" {
		m.Timestamp = now().UTC().Format(TimeFormat)
	}
	if w.Signer != nil {
		if err := m.Sign(w.Signer); err != nil {
			return nil, err
		}
		m.signExtras(w.Signer)
	}
	data, err := m.Encode()
	if err != nil {
		return nil, fmt.Errorf("encode message: %w", err)
	}
	limit := w.MaxSize
	if limit <= 0 {
		limit = MaxMessageSize
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(data), limit)
	}
	return data, nil
}
