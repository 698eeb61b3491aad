package channel

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
)

// A message's extras are the fields its signature does not cover: the
// metadata's mode, turn and host, its extensions (await_reply,
// needs_input, guard, …), and unknown members of content and of the top
// level. Anyone who can write the file, or a bridge passing it on, could
// add or change them without touching the signature, so a reader acts on
// the extras of a signed message only when a second signature, made with
// the same key, covers them all: [Message.ExtrasSignature], written by
// [Writer] beside the signature. An unsigned message keeps its extras:
// it has nothing to protect.

// ExtrasField is the top-level member that holds a message's extras
// signature.
const ExtrasField = "extras_signature"

// KindExtras is the payload kind of a message's extras signature.
const KindExtras = "message-extras"

// extra is one member outside the message signature: its section ("" for
// the top level, "content" or "metadata"), key and value.
type extra struct{ section, key, value string }

// extras returns m's extras in payload order: by section, then key.
// Mode, turn and host are their string values (omitted when empty), every
// other member compact JSON as encoding/json writes a raw value (with <,
// >, & and U+2028, U+2029 in strings escaped), which is how [Message.Encode]
// writes them, so the value reads back the same.
func (m *Message) extras() []extra {
	var out []extra
	raw := func(section string, members map[string]json.RawMessage) {
		for k, v := range members {
			out = append(out, extra{section, k, canonicalJSON(v)})
		}
	}
	raw("", m.Extra)
	raw("content", m.Content.Extra)
	for _, f := range []struct{ key, value string }{
		{"host", m.Metadata.Host}, {"mode", m.Metadata.Mode}, {"turn", m.Metadata.Turn},
	} {
		if f.value != "" {
			out = append(out, extra{"metadata", f.key, f.value})
		}
	}
	raw("metadata", m.Metadata.Extra)
	slices.SortFunc(out, func(a, b extra) int {
		return cmp.Or(cmp.Compare(a.section, b.section), cmp.Compare(a.key, b.key))
	})
	return out
}

// canonicalJSON is v as encoding/json writes a json.RawMessage: compact,
// HTML-escaped; v itself when it is not valid JSON.
func canonicalJSON(v json.RawMessage) string {
	b, err := json.Marshal(v)
	if err != nil {
		return string(v)
	}
	return string(b)
}

// HasExtras reports whether m carries any field its signature does not
// cover.
func (m *Message) HasExtras() bool {
	return m.Metadata.Mode != "" || m.Metadata.Turn != "" || m.Metadata.Host != "" ||
		len(m.Metadata.Extra) > 0 || len(m.Content.Extra) > 0 || len(m.Extra) > 0
}

// ExtrasPayload returns the bytes a message's extras signature covers
// (package signing's "message-extras" kind): id, session_id and from, then
// for each extra, ordered by section ("" for the top level, "content",
// "metadata") and then key, its section, key and value.
func (m *Message) ExtrasPayload() []byte {
	ex := m.extras()
	fields := make([]string, 0, 3+3*len(ex))
	fields = append(fields, m.ID, m.SessionID, m.From)
	for _, e := range ex {
		fields = append(fields, e.section, e.key, e.value)
	}
	return signing.Payload(KindExtras, fields...)
}

// signExtras signs m's extras with s, the signer of m's signature;
// without extras m gets no extras signature.
func (m *Message) signExtras(s *signing.Signer) {
	m.ExtrasSignature = nil
	if s != nil && m.HasExtras() {
		m.ExtrasSignature = s.Sign(m.ExtrasPayload())
	}
}

// ExtrasSigned reports whether a reader may act on m's extras: m is
// unsigned, has none, or carries an extras signature that checks with
// the key of its signature. It says nothing of the signature itself,
// which the reader judges with [Message.Verify].
func (m *Message) ExtrasSigned() bool {
	if m.Signature == nil || !m.HasExtras() {
		return true
	}
	es := m.ExtrasSignature
	if es == nil || es.Key != m.Signature.Key {
		return false
	}
	v := signing.NewVerifier(oneKey(es.Key)).Forgetful()
	return v.Verify(m.From, time.Time{}, m.ExtrasPayload(), es) == signing.Verified
}

// StripUnsigned drops from a signed message every field its signatures do
// not cover (its extras, unless [Message.ExtrasSigned]), so that no reader
// acts on a field someone added after the sender signed. It reports
// whether it dropped any.
func (m *Message) StripUnsigned() bool {
	if m.ExtrasSigned() {
		return false
	}
	m.Metadata = Metadata{InReplyTo: m.Metadata.InReplyTo, Hops: m.Metadata.Hops, Thread: m.Metadata.Thread}
	m.Content.Extra = nil
	m.Extra = nil
	m.ExtrasSignature = nil
	return true
}

// Trusted returns a copy of m without the fields its signatures do not
// cover ([Message.StripUnsigned]); m is unchanged.
func (m *Message) Trusted() Message {
	t := *m
	t.StripUnsigned()
	return t
}

// Extension returns metadata extension key, unless m is signed and its
// extras are not ([Message.ExtrasSigned]).
func (m *Message) Extension(key string) (json.RawMessage, bool) {
	v, ok := m.Metadata.Extra[key]
	if !ok || !m.ExtrasSigned() {
		return nil, false
	}
	return v, true
}

// oneKey is a keyring of one key, for any agent: the extras signature
// must be made with the key of the message's signature, whichever
// that is.
type oneKey string

func (k oneKey) Find(agent, pub string) (keyring.Key, error) {
	if pub != string(k) {
		return keyring.Key{}, keyring.ErrNotFound
	}
	return keyring.Key{Public: pub}, nil
}

func (k oneKey) HasKeys(string) bool { return true }
