// Package claim makes exactly one watcher own each message it answers, even
// when two watchers of one agent run on two hosts by mistake, and even across
// crashes.
//
// # Files
//
// For agent A answering message M of channel C:
//
//	ROOT/claims/C/A/M.json    the claim: owner, status, heartbeat
//	ROOT/claims/C/A/M.reply   the reply token: the id the one reply will have
//
// A claim is created with a no-replace publish, so of two watchers exactly
// one creates it. Its owner refreshes the heartbeat while it works and sets
// the status when it is done (replied, failed, skipped). A claim whose
// status is still "working" is taken over when its owner is gone: its
// heartbeat is older than the grace period, or its owner ran on this host
// (same boot and PID namespace) and its PID is dead. Takeover moves the old
// claim aside with rename, which only one contender can do, checks that what
// it moved is what it judged stale, and publishes a new claim.
//
// Takeover can misjudge an owner that is alive but cut off. What makes the
// reply unique is the reply token: before posting, the owner publishes
// M.reply (no-replace) naming the reply's id; whoever finds a token already
// there posts under that id or not at all, and a message id can be
// published only once. So at most one reply per message is ever visible.
package claim

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"collab/safedir"
	"collab/tree"
)

// Status of a claim.
const (
	Working = "working"
	Replied = "replied"
	Failed  = "failed"
	Skipped = "skipped"
)

// DefaultGrace is how old a working claim's heartbeat must be before another
// host may take it over. It must exceed the heartbeat interval plus the NFS
// attribute cache (60 s by default) plus clock skew.
const DefaultGrace = 2 * time.Minute

const maxFile = 64 << 10

// Owner identifies one watcher process.
type Owner struct {
	Agent    string `json:"agent"`
	Host     string `json:"host"`
	PID      int    `json:"pid"`
	BootID   string `json:"boot_id,omitempty"`
	PIDNS    string `json:"pid_ns,omitempty"`
	Instance string `json:"instance"`
}

// Self returns the Owner of this process for agent, with a fresh instance id.
func Self(agent string) Owner {
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return Owner{
		Agent:    agent,
		Host:     host,
		PID:      os.Getpid(),
		BootID:   strings.TrimSpace(string(boot)),
		PIDNS:    ns,
		Instance: randHex(8),
	}
}

// sameMachine reports whether PIDs of o can be checked from self: same host,
// same boot, same PID namespace. Only then is a PID meaningful.
func (self Owner) sameMachine(o Owner) bool {
	return o.Host == self.Host && o.BootID != "" && o.BootID == self.BootID && o.PIDNS == self.PIDNS
}

// Claim is the content of a claim file.
type Claim struct {
	Message   string    `json:"message"`
	Channel   string    `json:"channel"`
	Owner     Owner     `json:"owner"`
	Status    string    `json:"status"`
	Claimed   time.Time `json:"claimed"`
	Heartbeat time.Time `json:"heartbeat"`
	Reply     string    `json:"reply,omitempty"`
	Takeovers int       `json:"takeovers,omitempty"`
	Note      string    `json:"note,omitempty"`
}

// Outcome of Acquire.
type Outcome int

const (
	// Acquired: the caller owns the message now.
	Acquired Outcome = iota
	// Held: another live watcher owns it; look again later.
	Held
	// Done: it was already handled; Claim.Status says how.
	Done
)

func (o Outcome) String() string {
	switch o {
	case Acquired:
		return "acquired"
	case Held:
		return "held"
	default:
		return "done"
	}
}

// Store is one watcher's view of the claims of its agent.
type Store struct {
	Root  tree.Root
	Self  Owner
	Grace time.Duration    // default DefaultGrace
	Now   func() time.Time // default time.Now
	// Alive reports whether a PID on this machine is running; default
	// kill(pid, 0).
	Alive func(pid int) bool
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Store) grace() time.Duration {
	if s.Grace > 0 {
		return s.Grace
	}
	return DefaultGrace
}

func (s *Store) alive(pid int) bool {
	if s.Alive != nil {
		return s.Alive(pid)
	}
	return PIDAlive(pid)
}

// PIDAlive reports whether a process with this PID exists on this machine.
func PIDAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func (s *Store) dir(channel string, create bool) (*safedir.Dir, error) {
	if err := tree.CheckName("channel", channel); err != nil {
		return nil, err
	}
	if err := tree.CheckName("agent", s.Self.Agent); err != nil {
		return nil, err
	}
	path := s.Root.Claims(channel) + "/" + s.Self.Agent
	if create {
		return safedir.Create(path)
	}
	return safedir.Open(path)
}

// Stale reports whether a working claim's owner is gone, as seen by s.
func (s *Store) Stale(c Claim) bool {
	if c.Status != Working {
		return false
	}
	if c.Owner.Instance == s.Self.Instance {
		return false
	}
	if s.Self.sameMachine(c.Owner) && !s.alive(c.Owner.PID) {
		return true
	}
	return s.now().Sub(c.Heartbeat) > s.grace()
}

// Acquire claims message id of channel for s.Self. It returns the claim as
// it now stands and what happened.
func (s *Store) Acquire(channel, id string) (Claim, Outcome, error) {
	d, err := s.dir(channel, true)
	if err != nil {
		return Claim{}, 0, fmt.Errorf("claim %s: %w", id, err)
	}
	defer d.Close()
	name := id + ".json"
	for range 5 {
		now := s.now()
		c := Claim{Message: id, Channel: channel, Owner: s.Self, Status: Working, Claimed: now, Heartbeat: now}
		err := publish(d, name, c)
		if err == nil {
			return c, Acquired, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return Claim{}, 0, fmt.Errorf("claim %s: %w", id, err)
		}
		old, raw, err := read(d, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // moved aside by a takeover just now: try again
		}
		if err != nil {
			return Claim{}, 0, fmt.Errorf("claim %s: %w", id, err)
		}
		switch {
		case old.Status != Working:
			return old, Done, nil
		case old.Owner.Instance == s.Self.Instance:
			return old, Acquired, nil
		case !s.Stale(old):
			return old, Held, nil
		}
		c, ok, err := s.takeOver(d, name, old, raw)
		if err != nil {
			return Claim{}, 0, fmt.Errorf("take over claim %s: %w", id, err)
		}
		if ok {
			return c, Acquired, nil
		}
	}
	// Contended on every try: let the caller look again later.
	old, _, err := read(d, name)
	if err != nil {
		return Claim{}, 0, fmt.Errorf("claim %s: %w", id, err)
	}
	return old, Held, nil
}

// takeOver replaces a stale claim. ok is false when another contender got
// there first; the caller reads the claim again.
func (s *Store) takeOver(d *safedir.Dir, name string, old Claim, raw []byte) (Claim, bool, error) {
	aside := "." + name + "." + randHex(4) + ".stale"
	if err := d.Rename(name, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Claim{}, false, nil
		}
		return Claim{}, false, err
	}
	defer d.Remove(aside)
	moved, _, err := d.ReadFile(aside, maxFile)
	if err != nil {
		return Claim{}, false, err
	}
	if !bytes.Equal(moved, raw) {
		// We moved a claim we did not judge (refreshed, or a new owner's):
		// put it back unless someone has published another meanwhile.
		if err := d.Link(aside, name); err != nil && !errors.Is(err, fs.ErrExist) {
			return Claim{}, false, err
		}
		return Claim{}, false, nil
	}
	now := s.now()
	c := Claim{
		Message: old.Message, Channel: old.Channel, Owner: s.Self, Status: Working,
		Claimed: now, Heartbeat: now, Reply: old.Reply, Takeovers: old.Takeovers + 1,
		Note: fmt.Sprintf("taken over from %s pid %d", old.Owner.Host, old.Owner.PID),
	}
	if err := publish(d, name, c); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Claim{}, false, nil
		}
		return Claim{}, false, err
	}
	return c, true, nil
}

// Heartbeat refreshes the claim's heartbeat if s.Self still owns it.
func (s *Store) Heartbeat(channel, id string) error {
	return s.update(channel, id, func(c *Claim) { c.Heartbeat = s.now() })
}

// Finish records how the message was handled: status is Replied, Failed or
// Skipped; reply is the reply's id, if any; note says why, if useful.
func (s *Store) Finish(channel, id, status, reply, note string) error {
	return s.update(channel, id, func(c *Claim) {
		c.Status, c.Heartbeat, c.Note = status, s.now(), note
		if reply != "" {
			c.Reply = reply
		}
	})
}

// ErrLost is returned when the claim is no longer the caller's.
var ErrLost = errors.New("claim: lost to another owner")

func (s *Store) update(channel, id string, f func(*Claim)) error {
	d, err := s.dir(channel, false)
	if err != nil {
		return fmt.Errorf("claim %s: %w", id, err)
	}
	defer d.Close()
	name := id + ".json"
	c, _, err := read(d, name)
	if err != nil {
		return fmt.Errorf("claim %s: %w", id, err)
	}
	if c.Owner.Instance != s.Self.Instance {
		return fmt.Errorf("claim %s: %w (%s pid %d)", id, ErrLost, c.Owner.Host, c.Owner.PID)
	}
	f(&c)
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := d.Replace(name, data, 0o666); err != nil {
		return fmt.Errorf("claim %s: %w", id, err)
	}
	return nil
}

// Token is the content of a reply token.
type Token struct {
	Reply string    `json:"reply"`
	Owner Owner     `json:"owner"`
	Time  time.Time `json:"time"`
}

// ReserveReply publishes the reply token of message id naming reply as the
// id of its one reply. If a token exists already, it returns the id that
// token names and fresh is false: the caller must post under that id (a
// no-replace publish then decides) or not at all.
func (s *Store) ReserveReply(channel, id, reply string) (replyID string, fresh bool, err error) {
	d, err := s.dir(channel, true)
	if err != nil {
		return "", false, fmt.Errorf("reply token %s: %w", id, err)
	}
	defer d.Close()
	name := id + ".reply"
	data, err := json.Marshal(Token{Reply: reply, Owner: s.Self, Time: s.now()})
	if err != nil {
		return "", false, err
	}
	err = d.Publish(name, data, 0o666)
	if err == nil {
		return reply, true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return "", false, fmt.Errorf("reply token %s: %w", id, err)
	}
	raw, _, err := d.ReadFile(name, maxFile)
	if err != nil {
		return "", false, fmt.Errorf("reply token %s: %w", id, err)
	}
	var t Token
	if err := json.Unmarshal(raw, &t); err != nil || t.Reply == "" {
		return "", false, fmt.Errorf("reply token %s: unreadable token: %v", id, err)
	}
	return t.Reply, false, nil
}

// Read returns the claim of message id, if any.
func (s *Store) Read(channel, id string) (Claim, error) {
	d, err := s.dir(channel, false)
	if err != nil {
		return Claim{}, err
	}
	defer d.Close()
	c, _, err := read(d, id+".json")
	return c, err
}

func publish(d *safedir.Dir, name string, c Claim) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return d.Publish(name, data, 0o666)
}

func read(d *safedir.Dir, name string) (Claim, []byte, error) {
	raw, _, err := d.ReadFile(name, maxFile)
	if err != nil {
		return Claim{}, nil, err
	}
	var c Claim
	if err := json.Unmarshal(raw, &c); err != nil {
		// A torn or foreign claim: treat as a stale working claim so that
		// takeover can replace it after the grace period.
		return Claim{Status: Working, Heartbeat: time.Time{}}, raw, nil
	}
	return c, raw, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
