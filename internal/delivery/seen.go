package delivery

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Kinds of mark, ROOT/claims/C/A/M.KIND, each the payload kind of its
// signature: a watcher (or a joined session, collab join) noticed M
// (seen); a joined session handed M to its CLI (offered), and the CLI's
// model received it (read). Each is published once, by the first to
// know, and never rewritten.
const (
	KindSeen    = "seen"
	KindOffered = "offered"
	KindRead    = "read"
)

// Guards that refuse a message (the "guard" of a seen file or of a
// claim's note).
const (
	GuardMaxHops  = "max-hops"
	GuardPairRate = "pair-rate"
	GuardRate     = "rate"
	GuardBudget   = "budget"
	GuardTrust    = "trust"
)

var guards = []string{GuardMaxHops, GuardPairRate, GuardRate, GuardBudget, GuardTrust}

const maxSeen = 16 << 10

// SeenFile is the content of a mark: a seen file, ROOT/claims/C/A/M.seen,
// or an offered or read file (Kind).
type SeenFile struct {
	// Kind is the mark's kind, from its file's name (not written): the
	// kind its signature covers. "" is KindSeen.
	Kind     string    `json:"-"`
	Message  string    `json:"message"`
	Channel  string    `json:"channel"`
	Agent    string    `json:"agent"`
	Host     string    `json:"host"`
	PID      int       `json:"pid"`
	Instance string    `json:"instance"`
	Time     time.Time `json:"time"`
	Guard    string    `json:"guard,omitempty"` // set: refused by this guard
	Why      string    `json:"why,omitempty"`
	// Visible is when the watcher's scan first returned the message, and
	// Via what made that scan read it ([Woken]); both are unset in marks
	// of older versions and in offered and read marks.
	Visible time.Time `json:"visible,omitzero"`
	Via     string    `json:"via,omitempty"`

	Signature *signing.Signature `json:"signature,omitempty"`
}

// Payload returns the bytes the signature of s covers (see the package
// doc), s being the seen file of message id of channel in agent's folder.
func (s SeenFile) Payload(channel, agent, id string) []byte {
	fields := []string{channel, agent, id, s.Host, strconv.Itoa(s.PID), s.Instance,
		s.Time.UTC().Format(time.RFC3339Nano), s.Guard, s.Why}
	if !s.Visible.IsZero() || s.Via != "" {
		// Appended only when set: a mark of an older version verifies
		// as it did, and dropping or adding them breaks the signature
		// (the payload's fields are length-prefixed and counted).
		fields = append(fields, s.Visible.UTC().Format(time.RFC3339Nano), s.Via)
	}
	return signing.Payload(cmp.Or(s.Kind, KindSeen), fields...)
}

// Verify returns the verdict on s, read as the seen file of message id of
// channel in agent's folder, as agent's.
func (s SeenFile) Verify(v *signing.Verifier, channel, agent, id string) signing.Verdict {
	if s.Signature == nil {
		return signing.Unsigned
	}
	// No seen file of a message is made before it: judged at the later of
	// the two times, as claims are (signing.SignedAt).
	return v.VerifyNamed(agent, claim.MessageTime(id), s.Time, s.Payload(channel, agent, id), s.Signature)
}

func markName(kind, id string) string { return id + "." + kind }

// MarkSeen publishes the seen file of message id of channel for owner's
// agent, without replacing one already there (the first watcher to see a
// message records it; a later one, or a restart, changes nothing). guard
// and why are set when a guard refused the message before any claim.
func MarkSeen(root tree.Root, channel, id string, owner claim.Owner, now time.Time, guard, why string, signer *signing.Signer) error {
	return MarkSeenIn(claim.Files{Root: root}, channel, id, owner, now, guard, why, signer)
}

// MarkSeenIn is MarkSeen in the claims folders dirs opens (a remote
// watcher's are on the mount, through a bridge: see claim.Dirs).
func MarkSeenIn(dirs claim.Dirs, channel, id string, owner claim.Owner, now time.Time, guard, why string, signer *signing.Signer) error {
	return markIn(dirs, KindSeen, channel, id, owner, now, Woken{}, guard, why, signer)
}

// Ways a watcher is woken to read a message (SeenFile.Via): its poll's
// listing, an fsnotify event naming the file, a NATS announcement.
const (
	ViaPoll     = "poll"
	ViaFsnotify = "fsnotify"
	ViaNATS     = "nats"
)

// Woken is when a watcher's scan first returned a message (At) and what
// made it read the file (Via: ViaPoll, ViaFsnotify, ViaNATS), recorded in
// the seen file as its visible and via.
type Woken struct {
	At  time.Time
	Via string
}

// MarkSeenWoken is MarkSeenIn recording woken too: when and how the
// watcher came to read the message (the timeline's visible stage).
func MarkSeenWoken(dirs claim.Dirs, channel, id string, owner claim.Owner, now time.Time, woken Woken, guard, why string, signer *signing.Signer) error {
	return markIn(dirs, KindSeen, channel, id, owner, now, woken, guard, why, signer)
}

// Mark publishes the mark of kind (KindOffered, KindRead) of message id of
// channel for owner's agent, without replacing one already there.
func Mark(root tree.Root, kind, channel, id string, owner claim.Owner, now time.Time, signer *signing.Signer) error {
	if kind != KindOffered && kind != KindRead {
		return fmt.Errorf("delivery: unknown mark %q", kind)
	}
	return markIn(claim.Files{Root: root}, kind, channel, id, owner, now, Woken{}, "", "", signer)
}

func markIn(dirs claim.Dirs, kind, channel, id string, owner claim.Owner, now time.Time, woken Woken, guard, why string, signer *signing.Signer) error {
	for _, n := range []struct{ kind, v string }{{"channel", channel}, {"agent", owner.Agent}, {"message id", id}} {
		if err := tree.CheckName(n.kind, n.v); err != nil {
			return err
		}
	}
	s := SeenFile{Kind: kind, Message: id, Channel: channel, Agent: owner.Agent, Host: owner.Host, PID: owner.PID,
		Instance: owner.Instance, Time: now.UTC(), Guard: guard, Why: why, Via: woken.Via}
	if !woken.At.IsZero() {
		s.Visible = woken.At.UTC()
	}
	s.Signature = signer.Sign(s.Payload(channel, owner.Agent, id))
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	d, err := dirs.OpenClaims(channel, owner.Agent, true)
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind, id, err)
	}
	defer d.Close()
	if err := d.Publish(markName(kind, id), data, 0o666); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s %s: %w", kind, id, err)
	}
	return nil
}

// ReadSeen reads the seen file of message id of channel in agent's
// folder.
func ReadSeen(root tree.Root, channel, agent, id string) (SeenFile, error) {
	return ReadMark(root, KindSeen, channel, agent, id)
}

// ReadMark reads the mark of kind of message id of channel in agent's
// folder.
func ReadMark(root tree.Root, kind, channel, agent, id string) (SeenFile, error) {
	raw, err := readMarkFile(root, kind, channel, agent, id)
	if err != nil {
		return SeenFile{}, err
	}
	var s SeenFile
	if err := json.Unmarshal(raw, &s); err != nil {
		return SeenFile{}, fmt.Errorf("%s %s: %w", kind, id, err)
	}
	s.Kind = kind
	return s, nil
}

// A guard notice is a message of type "notice", or with the "guard"
// extension naming the guard, that a watcher posts when a guard stops a
// message (in reply to it) or the watcher (budget). No watcher answers
// one, and it is not the answer a sender waits for.
const (
	NoticeType = "notice"
	ExtGuard   = "guard"
)

// IsNotice reports whether m is a guard notice: its type says so, or its
// guard extension does, as its sender signed it (channel.Message.Extension:
// a guard added to a signed message by someone else does not silence it).
func IsNotice(m *channel.Message) bool {
	if m.Type == NoticeType {
		return true
	}
	_, guard := m.Extension(ExtGuard)
	return guard
}

// RefusalNote is the note of a claim finished as skipped because guard
// refused its message; [ParseRefusal] reads it back.
func RefusalNote(guard, why string) string { return guard + ": " + why }

// ParseRefusal returns the guard and reason of a claim note written by
// [RefusalNote]; ok is false for any other note.
func ParseRefusal(note string) (guard, why string, ok bool) {
	g, why, found := strings.Cut(note, ": ")
	for _, k := range guards {
		if found && g == k {
			return g, why, true
		}
	}
	return "", "", false
}

// readMarkFile reads the bytes of the mark of kind of message id of
// channel in agent's folder, ROOT/claims/C/A/M.KIND.
func readMarkFile(root tree.Root, kind, channel, agent, id string) ([]byte, error) {
	d, err := safedir.Open(root.AgentClaims(channel, agent))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	raw, _, err := d.ReadFile(markName(kind, id), maxSeen)
	return raw, err
}
