package channel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
)

// KindMessage is the payload kind of a signed message.
const KindMessage = "message"

// ErrWrongSigner is returned by [Writer.Post] when its signer's agent is
// not the message's sender.
var ErrWrongSigner = errors.New("channel: the key is another agent's")

// Payload returns the bytes a message's signature covers (package
// signing's "message" kind): id, session_id, from, to, timestamp, type,
// metadata.in_reply_to, metadata.thread, metadata.hops (decimal),
// content.text, content.code, and content.artifacts as compact JSON ("[]"
// when there are none), each as read (after Decode's defaults: to "all",
// type "chat"; a null in_reply_to or code is "").
func (m *Message) Payload() []byte { return m.appendPayload(nil) }

// appendPayload appends [Message.Payload] to b.
func (m *Message) appendPayload(b []byte) []byte {
	code := ""
	if m.Content.Code != nil {
		code = *m.Content.Code
	}
	return signing.AppendPayload(b, KindMessage,
		m.ID, m.SessionID, m.From, m.To, m.Timestamp, m.Type,
		m.Metadata.InReplyTo, m.Metadata.Thread, strconv.Itoa(m.Metadata.Hops),
		m.Content.Text, code, compactArtifacts(m.Content.Artifacts))
}

func compactArtifacts(a []json.RawMessage) string {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, v := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := json.Compact(&b, v); err != nil {
			b.Write(v)
		}
	}
	b.WriteByte(']')
	return b.String()
}

// Sign signs m as s's agent (a nil s removes any signature).
func (m *Message) Sign(s *signing.Signer) error {
	if s == nil {
		m.Signature = nil
		return nil
	}
	if s.Agent() != m.From {
		return fmt.Errorf("%w: %s cannot sign as %s", ErrWrongSigner, s.Agent(), m.From)
	}
	m.Signature = s.Sign(m.Payload())
	return nil
}

// Verify returns the verdict on m's signature, m having been read from
// channel. A message verifies only where it was written: its id must be
// its file's name and its session_id the channel it was read from, or a
// signed message copied elsewhere would pass. It is judged at the later
// of its timestamp and the time in its id, and a timestamp more than
// signing.MaxSkew before its id's time is a bad signature
// ([signing.Verifier.VerifyNamed]): a holder of a revoked key cannot
// backdate the timestamp, which the signer chooses, past the id, which
// readers find the message by.
func (m *Message) Verify(v *signing.Verifier, channel string) signing.Verdict {
	if m.Signature == nil {
		return signing.Unsigned
	}
	if m.File != "" && strings.TrimSuffix(m.File, nameSuffix) != m.ID {
		return signing.BadSignature
	}
	if m.SessionID != channel {
		return signing.BadSignature
	}
	buf, _ := payloadBufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	payload := m.appendPayload((*buf)[:0])
	named, claimed := m.signedTimes()
	verdict := v.VerifyNamed(m.From, named, claimed, payload, m.Signature)
	if cap(payload) <= maxPooledPayload {
		*buf = payload[:0]
		payloadBufs.Put(buf)
	}
	return verdict
}

// signedTimes returns the time m's id carries and the time its timestamp
// claims, each zero when it does not parse (an id not of the form
// msg-YYYYMMDD-HHMMSS-AGENT-HEX4 is judged by the timestamp alone, as
// before ids were compared).
func (m *Message) signedTimes() (named, claimed time.Time) {
	if n, err := ParseID(m.ID); err == nil {
		named = n.Time
	}
	if t, err := time.Parse(time.RFC3339Nano, m.Timestamp); err == nil {
		claimed = t.UTC()
	}
	return named, claimed
}

// payloadBufs holds buffers for the payloads Verify builds and drops once
// checked (Verifier.Verify keeps none of it): a reader verifying 1 MB
// messages one after another reuses one buffer instead of allocating
// (and the kernel zeroing) a fresh megabyte for each.
var payloadBufs sync.Pool

// maxPooledPayload is the largest buffer kept in payloadBufs: a message's
// payload is at most about MaxMessageSize.
const maxPooledPayload = 2 * MaxMessageSize
