package delivery

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// KindAwaited is the mark a sender that waited for the reply to its
// message M (collab send --wait) writes once it has the reply, in its own
// claims folder:
//
//	ROOT/claims/C/S/M.awaited
//
// S being M's sender: JSON with message, channel, agent (S), reply (the
// reply's id), host, pid and time. It is published once, without
// replacing, and, with a key, signed (kind "awaited") over channel,
// agent, message, reply, host, pid (decimal) and time (RFC3339Nano,
// UTC). It is read only as the mark of M's own sender (the file's agent
// is M's from, its message M, its reply the addressee's answer to M), so
// a file another account drops there means nothing else; with a
// Verifier one that does not verify as the sender's while the sender has
// keys is ignored. It is the timeline's reply_seen stage.
const KindAwaited = "awaited"

// AwaitedFile is the content of an awaited mark ([KindAwaited]).
type AwaitedFile struct {
	Message string    `json:"message"`
	Channel string    `json:"channel"`
	Agent   string    `json:"agent"`
	Reply   string    `json:"reply"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Time    time.Time `json:"time"`

	Signature *signing.Signature `json:"signature,omitempty"`
}

// Payload returns the bytes the signature of a covers, a being the
// awaited mark of message id of channel in agent's folder.
func (a AwaitedFile) Payload(channel, agent, id string) []byte {
	return signing.Payload(KindAwaited, channel, agent, id, a.Reply, a.Host, strconv.Itoa(a.PID),
		a.Time.UTC().Format(time.RFC3339Nano))
}

// Verify returns the verdict on a, read as the awaited mark of message id
// of channel in agent's folder, as agent's.
func (a AwaitedFile) Verify(v *signing.Verifier, channel, agent, id string) signing.Verdict {
	if a.Signature == nil {
		return signing.Unsigned
	}
	return v.VerifyNamed(agent, claim.MessageTime(id), a.Time, a.Payload(channel, agent, id), a.Signature)
}

// MarkAwaited publishes the awaited mark of message id of channel, sent
// by owner's agent, which got reply: once (a mark already there is kept).
func MarkAwaited(root tree.Root, channel, id, reply string, owner claim.Owner, now time.Time, signer *signing.Signer) error {
	for _, n := range []struct{ kind, v string }{{"channel", channel}, {"agent", owner.Agent}, {"message id", id}, {"reply id", reply}} {
		if err := tree.CheckName(n.kind, n.v); err != nil {
			return err
		}
	}
	a := AwaitedFile{Message: id, Channel: channel, Agent: owner.Agent, Reply: reply, Host: owner.Host, PID: owner.PID, Time: now.UTC()}
	a.Signature = signer.Sign(a.Payload(channel, owner.Agent, id))
	data, err := json.Marshal(a)
	if err != nil {
		return err
	}
	d, err := claim.Files{Root: root}.OpenClaims(channel, owner.Agent, true)
	if err != nil {
		return fmt.Errorf("awaited %s: %w", id, err)
	}
	defer d.Close()
	if err := d.Publish(markName(KindAwaited, id), data, 0o666); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("awaited %s: %w", id, err)
	}
	return nil
}

// ReadAwaited reads the awaited mark of message id of channel in agent's
// folder, as written: [ParseAwaited] checks only its form.
func ReadAwaited(root tree.Root, channel, agent, id string) (AwaitedFile, error) {
	raw, err := readMarkFile(root, KindAwaited, channel, agent, id)
	if err != nil {
		return AwaitedFile{}, err
	}
	a, err := ParseAwaited(raw)
	if err != nil {
		return AwaitedFile{}, fmt.Errorf("awaited %s: %w", id, err)
	}
	return a, nil
}

// ErrBadAwaited is returned by [ParseAwaited] for a mark without its
// names or time.
var ErrBadAwaited = errors.New("delivery: not an awaited mark")

// ParseAwaited decodes an awaited mark: JSON whose channel, agent,
// message and reply are valid names and whose time is set.
func ParseAwaited(raw []byte) (AwaitedFile, error) {
	var a AwaitedFile
	if err := json.Unmarshal(raw, &a); err != nil {
		return AwaitedFile{}, err
	}
	for _, n := range []struct{ kind, v string }{{"channel", a.Channel}, {"agent", a.Agent}, {"message id", a.Message}, {"reply id", a.Reply}} {
		if tree.CheckName(n.kind, n.v) != nil {
			return AwaitedFile{}, fmt.Errorf("%w: bad %s", ErrBadAwaited, n.kind)
		}
	}
	if a.Time.IsZero() {
		return AwaitedFile{}, fmt.Errorf("%w: no time", ErrBadAwaited)
	}
	return a, nil
}

// verifiedAwaited is the awaited mark of m, a message of ch, by its
// sender for reply: ok false when there is none, it is for another
// message, channel or reply, or (with v) it does not verify as the
// sender's while the sender has keys.
func verifiedAwaited(root tree.Root, ch string, m *channel.Message, reply string, v *signing.Verifier) (AwaitedFile, bool) {
	id := m.Key()
	if tree.CheckName("agent", m.From) != nil {
		return AwaitedFile{}, false
	}
	a, err := ReadAwaited(root, ch, m.From, id)
	if err != nil || a.Agent != m.From || a.Message != id || a.Channel != ch || a.Reply != reply {
		return AwaitedFile{}, false
	}
	if v != nil && a.Verify(v, ch, m.From, id) != signing.Verified && v.HasKeys(m.From) {
		return AwaitedFile{}, false
	}
	return a, true
}
