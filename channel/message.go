package channel

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/jsonobj"
)

// MaxMessageSize is the default size limit of a message file.
const MaxMessageSize = 1 << 20

// TimeFormat is the layout of a message's timestamp.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// Broadcast is the recipient of a message to everyone.
const Broadcast = "all"

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("channel: malformed message")

// Message is one message, in the seed schema.
type Message struct {
	ID        string
	Timestamp string // ISO-8601 UTC, as written; see Time
	SessionID string // the channel
	From      string
	To        string // an agent ID or "all"
	Type      string
	Content   Content
	Metadata  Metadata

	// Signature is the sender's signature (see Sign), nil when unsigned.
	Signature *signing.Signature
	// ExtrasSignature is the sender's signature of the fields Signature
	// does not cover (see ExtrasPayload), nil when there is none. A reader
	// acts on those fields of a signed message only when it checks (see
	// StripUnsigned).
	ExtrasSignature *signing.Signature

	// Extra holds unknown top-level fields, kept verbatim.
	Extra map[string]json.RawMessage

	// File is the file name the message was read from. Readers set it; it
	// is never written.
	File string
}

// Content is a message's body.
type Content struct {
	Text      string
	Code      *string
	Artifacts []json.RawMessage
	Extra     map[string]json.RawMessage
}

// Metadata holds the seed's metadata and collab's extensions.
type Metadata struct {
	Mode      string
	Turn      string
	InReplyTo string // empty: not a reply
	Hops      int    // reply-chain depth
	Thread    string // id of the first message of the chain
	Host      string // the sender's hostname
	Extra     map[string]json.RawMessage
}

// Time returns the message's time: the timestamp field, else the time in its
// file name, else the zero time.
func (m *Message) Time() time.Time {
	if t, err := time.Parse(time.RFC3339Nano, m.Timestamp); err == nil {
		return t.UTC()
	}
	for _, s := range []string{m.File, m.ID + ".json"} {
		if n, err := ParseName(s); err == nil {
			return n.Time
		}
	}
	return time.Time{}
}

// Key returns the id of the message's file (its name without ".json"),
// which is unique within the channel, unlike the JSON id a foreign writer
// may have set. Messages not read from a file return ID.
func (m *Message) Key() string {
	if k, ok := strings.CutSuffix(m.File, nameSuffix); ok && k != "" {
		return k
	}
	return m.ID
}

// ThreadID returns the id of the first message of m's chain.
func (m *Message) ThreadID() string {
	if m.Metadata.Thread != "" {
		return m.Metadata.Thread
	}
	if m.Metadata.InReplyTo != "" {
		return m.Metadata.InReplyTo
	}
	return m.ID
}

// Decode parses a message file's contents. file and channel fill in a
// missing id, timestamp and session_id; either may be empty.
func Decode(data []byte, file, channel string) (Message, error) {
	var m Message
	// UnmarshalJSON validates data itself (jsonobj.Parse): through
	// json.Unmarshal, a 1 MB message would be scanned once more.
	if err := m.UnmarshalJSON(data); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if m.From == "" {
		return Message{}, fmt.Errorf("%w: no \"from\"", ErrMalformed)
	}
	if m.Content.Text == "" && !hasText(data) {
		return Message{}, fmt.Errorf("%w: no \"content.text\"", ErrMalformed)
	}
	m.File = file
	if n, err := ParseName(file); err == nil {
		if m.ID == "" {
			m.ID = n.ID()
		}
		if m.Timestamp == "" {
			m.Timestamp = n.Time.Format(TimeFormat)
		}
	}
	if m.SessionID == "" {
		m.SessionID = channel
	}
	if m.To == "" {
		m.To = Broadcast
	}
	if m.Type == "" {
		m.Type = "chat"
	}
	return m, nil
}

// Encode returns the message as written to its file: every field of the
// seed schema, collab's metadata, then unknown fields.
func (m *Message) Encode() ([]byte, error) { return m.MarshalJSON() }

// MarshalJSON implements json.Marshaler.
func (m Message) MarshalJSON() ([]byte, error) {
	var w jsonobj.Writer
	w.Field("id", m.ID)
	w.Field("timestamp", m.Timestamp)
	w.Field("session_id", m.SessionID)
	w.Field("from", m.From)
	w.Field("to", m.To)
	w.Field("type", m.Type)
	content, err := m.Content.MarshalJSON()
	if err != nil {
		return nil, err
	}
	w.Raw("content", content)
	w.Field("metadata", m.Metadata)
	if m.Signature != nil {
		w.Field(signing.Field, m.Signature)
	}
	if m.ExtrasSignature != nil {
		w.Field(ExtrasField, m.ExtrasSignature)
	}
	w.Extra(m.Extra, signing.Field, ExtrasField)
	return w.Bytes()
}

// MarshalJSON implements json.Marshaler.
func (c Content) MarshalJSON() ([]byte, error) {
	var w jsonobj.Writer
	w.Field("text", c.Text)
	w.Field("code", c.Code)
	if c.Artifacts == nil {
		w.Field("artifacts", []json.RawMessage{})
	} else {
		w.Field("artifacts", c.Artifacts)
	}
	w.Extra(c.Extra)
	return w.Bytes()
}

// MarshalJSON implements json.Marshaler.
func (md Metadata) MarshalJSON() ([]byte, error) {
	var w jsonobj.Writer
	w.Field("mode", md.Mode)
	w.Field("turn", md.Turn)
	if md.InReplyTo == "" {
		w.Field("in_reply_to", nil)
	} else {
		w.Field("in_reply_to", md.InReplyTo)
	}
	w.Field("hops", md.Hops)
	if md.Thread != "" {
		w.Field("thread", md.Thread)
	}
	if md.Host != "" {
		w.Field("host", md.Host)
	}
	w.Extra(md.Extra)
	return w.Bytes()
}

// UnmarshalJSON implements json.Unmarshaler. It does not apply Decode's
// defaults or checks.
func (m *Message) UnmarshalJSON(b []byte) error {
	f, err := jsonobj.Parse(b)
	if err != nil {
		return err
	}
	*m = Message{}
	// Only "from" and "content.text" are required (docs/protocol.md#messages): a field of the
	// wrong type elsewhere is dropped, so one foreign writer's odd field does
	// not make the message malformed.
	err = errors.Join(
		f.Take("from", &m.From),
		f.TakeObject("content", m.Content.fromFields),
	)
	f.Lenient("id", &m.ID)
	f.Lenient("timestamp", &m.Timestamp)
	f.Lenient("session_id", &m.SessionID)
	f.Lenient("to", &m.To)
	f.Lenient("type", &m.Type)
	f.Lenient("metadata", &m.Metadata)
	f.Lenient(signing.Field, &m.Signature)
	f.Lenient(ExtrasField, &m.ExtrasSignature)
	m.Extra = f.Rest()
	return err
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *Content) UnmarshalJSON(b []byte) error {
	f, err := jsonobj.Parse(b)
	if err != nil {
		return err
	}
	return c.fromFields(f)
}

// fromFields is UnmarshalJSON from the object's members.
func (c *Content) fromFields(f jsonobj.Fields) error {
	*c = Content{}
	err := f.Take("text", &c.Text)
	f.Lenient("code", &c.Code)
	f.Lenient("artifacts", &c.Artifacts)
	c.Extra = f.Rest()
	return err
}

// UnmarshalJSON implements json.Unmarshaler.
func (md *Metadata) UnmarshalJSON(b []byte) error {
	f, err := jsonobj.Parse(b)
	if err != nil {
		return err
	}
	*md = Metadata{}
	var hops json.Number
	f.Lenient("mode", &md.Mode)
	f.Lenient("turn", &md.Turn)
	f.Lenient("in_reply_to", &md.InReplyTo)
	f.Lenient("hops", &hops)
	f.Lenient("thread", &md.Thread)
	f.Lenient("host", &md.Host)
	if hops != "" {
		// Be liberal: 2, 2.0 and "2" are all depth 2; nonsense is 0.
		if n, e := hops.Float64(); e == nil && n >= 0 && n < 1<<31 {
			md.Hops = int(n)
		}
	}
	md.Extra = f.Rest()
	return nil
}

// hasText reports whether data has a string content.text, empty or not.
// Keys are matched exactly, as everywhere else in a message (a struct
// target would let encoding/json match "Content" or "TEXT").
func hasText(data []byte) bool {
	var top, content map[string]json.RawMessage
	var text *string
	return json.Unmarshal(data, &top) == nil &&
		json.Unmarshal(top["content"], &content) == nil &&
		json.Unmarshal(content["text"], &text) == nil && text != nil
}
