package service

import (
	"bytes"
	"context"
	"errors"
	"io/fs"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// Relayed is what a relay wrote: the message's id, and Existed when the
// same message was there already (a retry).
type Relayed struct {
	ID      string
	Existed bool
}

// Relay writes on channel ch a message that agent signed on another host
// (its post through a bridge): data is the message file's JSON, with its
// id. It must be agent's (from and id), of ch, and verify as agent's
// (Config.Verifier); what agent did not sign (a host, needs_input,
// unknown members) is dropped, not passed on for readers to weigh. The
// same message again is Existed; another with its id is a Conflict. It
// is not announced: the bridge publishes every file that lands.
func (m *Mount) Relay(_ context.Context, agent, ch string, data []byte) (Relayed, error) {
	if err := tree.CheckName("channel", ch); err != nil {
		return Relayed{}, errkind.Wrap(errkind.Invalid, err)
	}
	if len(data) == 0 {
		return Relayed{}, errkind.New(errkind.Invalid, "no message")
	}
	msg, err := channel.Decode(data, "", ch)
	if err != nil {
		return Relayed{}, errkind.Wrap(errkind.Invalid, err)
	}
	n, err := channel.ParseID(msg.ID)
	if err != nil {
		return Relayed{}, errkind.New(errkind.Invalid, "the message needs its id: %v", err)
	}
	switch {
	case msg.From != agent:
		return Relayed{}, errkind.New(errkind.Forbidden, "the message is from %q, not %q", msg.From, agent)
	case n.Agent != agent:
		return Relayed{}, errkind.New(errkind.Forbidden, "the message id %s is not %q's", msg.ID, agent)
	case msg.SessionID != ch:
		return Relayed{}, errkind.New(errkind.Invalid, "the message's session_id is %q, not the channel %q", msg.SessionID, ch)
	}
	msg.File = msg.ID + ".json"
	if msg.Timestamp == "" {
		msg.Timestamp = n.Time.Format(channel.TimeFormat) // as Decode does for a file
	}
	if v := msg.Verify(m.cfg.Verifier, ch); v != signing.Verified {
		return Relayed{}, errkind.New(errkind.Forbidden, "%s's signature: %s", agent, v)
	}
	if msg.StripUnsigned() {
		m.cfg.Logger.Debug("dropped unsigned fields", "channel", ch, keyMsg, msg.ID, "agent", agent)
	}
	w := channel.Writer{Root: m.cfg.Root, Now: m.cfg.Now}
	err = w.Post(&msg)
	if errors.Is(err, fs.ErrExist) {
		old, lerr := channel.Lookup(m.cfg.Root, ch, msg.ID)
		if lerr != nil {
			return Relayed{}, classifyWrite("read the existing "+msg.ID, lerr)
		}
		a, _ := old.Encode()
		b, _ := msg.Encode()
		if !bytes.Equal(a, b) {
			return Relayed{}, errkind.New(errkind.Conflict, "another message has the id %s", msg.ID)
		}
		return Relayed{ID: msg.ID, Existed: true}, nil
	}
	if err != nil {
		return Relayed{}, classifyWrite("write", err)
	}
	return Relayed{ID: msg.ID}, nil
}

// RelayPresence writes agent's heartbeat, written and signed on another
// host (its watcher's, through a bridge): data is the presence file's
// JSON. It must be agent's and verify as agent's (Config.Verifier). It
// returns the heartbeat written.
func (m *Mount) RelayPresence(_ context.Context, agent string, data []byte) (presence.Status, error) {
	if len(data) == 0 {
		return presence.Status{}, errkind.New(errkind.Invalid, "no presence")
	}
	st, err := presence.Decode(data, "")
	if err != nil {
		return presence.Status{}, errkind.Wrap(errkind.Invalid, err)
	}
	if st.AgentID != agent {
		return presence.Status{}, errkind.New(errkind.Forbidden, "the heartbeat is %q's, not %q's", st.AgentID, agent)
	}
	if v := st.Verify(m.cfg.Verifier, agent); v != signing.Verified {
		return presence.Status{}, errkind.New(errkind.Forbidden, "%s's signature: %s", agent, v)
	}
	if err := presence.Write(m.cfg.Root, st); err != nil {
		return presence.Status{}, classifyWrite("write", err)
	}
	return st, nil
}
