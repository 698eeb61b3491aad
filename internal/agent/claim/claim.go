// Package claim makes exactly one watcher own each message it answers, even
// when two watchers of one agent run on two hosts by mistake, and even across
// crashes.
//
// # Files
//
// For agent A answering message M of channel C:
//
//	ROOT/claims/C/A/M.json    the claim, generation 0: owner, status, heartbeat
//	ROOT/claims/C/A/M.N.json  generation N, made by the N-th takeover
//	ROOT/claims/C/A/M.reply   the reply token: the id the one reply will have
//	ROOT/claims/C/A/M.reply.N token N, when the id of token N-1 was taken
//
// The claim of M is its highest generation. Each generation is created
// with a no-replace publish, so of several watchers exactly one creates it,
// and only its owner ever rewrites it: the owner refreshes the heartbeat
// while it works and sets the status when it is done (replied, failed,
// skipped). A claim whose status is still "working" is taken over when its
// owner is gone: its heartbeat is older than the grace period, or its owner
// ran on this host (same boot and PID namespace) and its PID is dead.
// Takeover publishes the next generation; nothing is moved or replaced, so
// no contender can remove a claim it did not judge, and an owner that wakes
// up late writes only into its own, superseded generation and learns with
// [ErrLost] that it lost.
//
// A message id is made of the characters of a name ([tree.NameByte]); it
// has no '.', so the generations' file names cannot collide.
//
// Takeover can misjudge an owner that is alive but cut off. What makes the
// reply unique is the reply token: before posting, the owner publishes
// M.reply (no-replace) naming the reply's id; whoever finds a token already
// there posts under that id or not at all, and a message id can be
// published only once. So at most one reply per message is ever visible.
//
// An id has a random part of 16 bits, so two replies made in one second
// can draw the same id: the second post then finds the name taken by a
// message that does not answer M. Its poster renews the token
// ([Store.RenewReply]): token N+1, again no-replace, names a new id, and
// every poster follows the highest token.
//
// # Signatures
//
// A watcher with a key ([Store.Signer]) signs every claim generation it
// writes (package signing, kind "claim") over, in this order:
//
//	channel, agent (the claims folder's), message, generation (decimal),
//	owner.agent, owner.host, owner.pid (decimal), owner.boot_id,
//	owner.pid_ns, owner.instance, status, claimed, heartbeat, reply,
//	takeovers (decimal), note
//
// and every reply token (kind "claim-token"): channel, agent, message,
// token number (decimal), reply, owner.instance, time. Times are RFC 3339
// in UTC with the fraction's trailing zeros dropped (Go's RFC3339Nano).
// The place (channel, agent, message, generation) is signed, so a claim
// copied to another message or generation does not verify.
//
// A claim in the folder of an agent that has keys is that agent's claim:
// under [Store.Trust] "known" (the default) a generation that does not
// verify as the agent's (unsigned, or signed by another key) is forged.
// It is taken over at once, as a stale claim is, whatever its status (a
// forged "replied" must not silence a message), and logged; a forged
// newer generation met while refreshing a claim is taken over the same
// way, not obeyed as a loss. A forged reply token is renewed past. A
// claim file that does not decode is not judged forged (it may be a torn
// read of a real one): it keeps the grace period. Under "any" nothing is
// checked, as before signatures.
package claim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/randhex"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
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

// maxGen bounds the generations a claim may have.
const maxGen = 1000

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
		Instance: randhex.String(8),
	}
}

// sameMachine reports whether PIDs of o can be checked from w: same host,
// same boot, same PID namespace. Only then is a PID meaningful.
func (w Owner) sameMachine(o Owner) bool {
	return o.Host == w.Host && o.BootID != "" && o.BootID == w.BootID && o.PIDNS == w.PIDNS
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

	Signature *signing.Signature `json:"signature,omitempty"`

	torn bool // read from a file that does not decode
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
	// proc.PIDAlive (kill(pid, 0)).
	Alive func(pid int) bool

	// Signer signs what the store writes (nil: unsigned). Verifier and
	// Trust judge the claims found (see the package doc); with no
	// Verifier no agent has keys. Log, if set, reports forged claims, and
	// OnForged, if set, is told of each one found (what is "claim" or
	// "reply token"; it may be called from any goroutine that uses the
	// store).
	Signer   *signing.Signer
	Verifier *signing.Verifier
	Trust    signing.Policy
	Log      *slog.Logger
	OnForged func(channel, id, what string, owner string, verdict signing.Verdict)

	// Dirs opens the claims folders (nil: the files under Root, Files).
	Dirs Dirs
}

// Dir is what a Store does in one agent's claims folder of one channel,
// ROOT/claims/C/A/: the operations of [safedir.Dir] of the same names,
// with their contracts (Publish never replaces and fails with
// [fs.ErrExist] when the name is taken; Replace and Publish are atomic
// and durable when they return; ReadFile reads at most limit bytes and
// returns the file's info, whose ModTime dates a torn claim; a missing
// file is [fs.ErrNotExist]). A *safedir.Dir is one; a folder on the mount
// reached through a bridge is another (package remote).
type Dir interface {
	Publish(name string, data []byte, perm fs.FileMode) error
	Replace(name string, data []byte, perm fs.FileMode) error
	ReadFile(name string, limit int64) ([]byte, fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	Close() error
}

// Dirs opens agent's claims folder of channel, creating it if create (a
// folder that does not exist is [fs.ErrNotExist] otherwise). The Store
// has validated both names.
type Dirs interface {
	OpenClaims(channel, agent string, create bool) (Dir, error)
}

// Files is the Dirs of the files under a Root.
type Files struct{ Root tree.Root }

// OpenClaims opens Root/claims/channel/agent/ with package safedir.
func (f Files) OpenClaims(channel, agent string, create bool) (Dir, error) {
	path := f.Root.AgentClaims(channel, agent)
	open := safedir.Open
	if create {
		open = safedir.Create
	}
	d, err := open(path)
	if err != nil {
		return nil, err
	}
	return d, nil
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
	return proc.PIDAlive(pid)
}

func (s *Store) dir(channel, id string, create bool) (Dir, error) {
	if err := tree.CheckName("channel", channel); err != nil {
		return nil, err
	}
	if err := checkID(id); err != nil {
		return nil, err
	}
	if err := tree.CheckName("agent", s.Self.Agent); err != nil {
		return nil, err
	}
	if s.Dirs != nil {
		return s.Dirs.OpenClaims(channel, s.Self.Agent, create)
	}
	return Files{Root: s.Root}.OpenClaims(channel, s.Self.Agent, create)
}

// checkID refuses a message id that could not name a message file.
func checkID(id string) error {
	if id == "" || len(id) > 200 || id[0] == '-' {
		return fmt.Errorf("%w: message id %q", tree.ErrBadName, id)
	}
	for i := 0; i < len(id); i++ {
		if !tree.NameByte(id[i]) {
			return fmt.Errorf("%w: message id %q has %s at byte %d", tree.ErrBadName, id, tree.CharAt(id, i), i)
		}
	}
	return nil
}

// genName is the file of generation g of the claim of message id.
func genName(id string, g int) string {
	if g == 0 {
		return id + ".json"
	}
	return id + "." + strconv.Itoa(g) + ".json"
}

// current reads the claim of message id: its highest generation, gen. gen
// is -1 when there is no claim.
func current(d Dir, id string) (c Claim, gen int, err error) {
	return highest("takeovers", func(g int) (Claim, error) {
		c, _, err := read(d, genName(id, g))
		return c, err
	})
}

// highest reads generations 0, 1, … of a file with read until one does not
// exist, and returns the last one read; gen is -1 when there is none.
func highest[T any](what string, read func(gen int) (T, error)) (v T, gen int, err error) {
	gen = -1
	for g := 0; g < maxGen; g++ {
		next, err := read(g)
		if errors.Is(err, fs.ErrNotExist) {
			return v, gen, nil
		}
		if err != nil {
			var zero T
			return zero, 0, err
		}
		v, gen = next, g
	}
	var zero T
	return zero, 0, fmt.Errorf("more than %d %s", maxGen, what)
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
	d, err := s.dir(channel, id, true)
	if err != nil {
		return Claim{}, 0, fmt.Errorf("claim %s: %w", id, err)
	}
	defer d.Close()
	for range 5 {
		old, gen, err := current(d, id)
		if err != nil {
			return Claim{}, 0, fmt.Errorf("claim %s: %w", id, err)
		}
		forged := gen >= 0 && s.forged(old, channel, id, gen)
		switch {
		case gen < 0:
		case forged:
		case old.Status != Working:
			return old, Done, nil
		case old.Owner.Instance == s.Self.Instance:
			return old, Acquired, nil
		case !s.Stale(old):
			return old, Held, nil
		}
		now := s.now()
		c := Claim{Message: id, Channel: channel, Owner: s.Self, Status: Working, Claimed: now, Heartbeat: now}
		if gen >= 0 {
			c.Reply, c.Takeovers = old.Reply, gen+1
			c.Note = fmt.Sprintf("taken over from %s pid %d", old.Owner.Host, old.Owner.PID)
		}
		if forged {
			c.Reply, c.Note = "", "taken over from a forged claim"
		}
		s.sign(&c, s.Self.Agent, gen+1)
		err = publish(d, genName(id, gen+1), c)
		if err == nil {
			return c, Acquired, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return Claim{}, 0, fmt.Errorf("claim %s: %w", id, err)
		}
		// Another watcher published this generation first: look again.
	}
	// Contended on every try (or a generation is not visible yet here): let
	// the caller look again later.
	old, _, err := current(d, id)
	if err != nil {
		return Claim{}, 0, fmt.Errorf("claim %s: %w", id, err)
	}
	return old, Held, nil
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
	d, err := s.dir(channel, id, false)
	if err != nil {
		return fmt.Errorf("claim %s: %w", id, err)
	}
	defer d.Close()
	c, gen, err := current(d, id)
	if err != nil {
		return fmt.Errorf("claim %s: %w", id, err)
	}
	if gen < 0 {
		return fmt.Errorf("claim %s: %w", id, fs.ErrNotExist)
	}
	if s.forged(c, channel, id, gen) {
		// Not a loss: a forged generation is taken over, and the caller
		// carries on in the next one.
		now := s.now()
		next := Claim{Message: id, Channel: channel, Owner: s.Self, Status: Working, Claimed: now, Heartbeat: now,
			Takeovers: gen + 1, Note: "taken over from a forged claim"}
		f(&next)
		s.sign(&next, s.Self.Agent, gen+1)
		if err := publish(d, genName(id, gen+1), next); err != nil {
			return fmt.Errorf("claim %s: %w (after a forged claim)", id, ErrLost)
		}
		return nil
	}
	if c.Owner.Instance != s.Self.Instance {
		return fmt.Errorf("claim %s: %w (%s pid %d)", id, ErrLost, c.Owner.Host, c.Owner.PID)
	}
	f(&c)
	s.sign(&c, s.Self.Agent, gen)
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	// Only s.Self writes this generation, so nothing is overwritten but its
	// own claim.
	if err := d.Replace(genName(id, gen), data, 0o666); err != nil {
		return fmt.Errorf("claim %s: %w", id, err)
	}
	// A takeover published since we looked makes this write moot.
	if _, err := d.Lstat(genName(id, gen+1)); err == nil {
		return fmt.Errorf("claim %s: %w (taken over)", id, ErrLost)
	}
	return nil
}

// Token is the content of a reply token.
type Token struct {
	Reply string    `json:"reply"`
	Owner Owner     `json:"owner"`
	Time  time.Time `json:"time"`

	Signature *signing.Signature `json:"signature,omitempty"`
}

// ReserveReply publishes the reply token of message id naming reply as the
// id of its one reply. If a token exists already, it returns the id the
// highest token names and fresh is false: the caller must post under that
// id (a no-replace publish then decides) or not at all.
func (s *Store) ReserveReply(channel, id, reply string) (replyID string, fresh bool, err error) {
	return s.RenewReply(channel, id, "", reply)
}

// RenewReply is for a caller that found the id its token names, taken,
// already used by a message that does not answer message id: it publishes
// the next token naming reply, and returns the id to post under now (reply,
// or the id of a token another poster published first). With taken empty
// it is ReserveReply.
func (s *Store) RenewReply(channel, id, taken, reply string) (replyID string, fresh bool, err error) {
	d, err := s.dir(channel, id, true)
	if err != nil {
		return "", false, fmt.Errorf("reply token %s: %w", id, err)
	}
	defer d.Close()
	t, gen, err := currentToken(d, id)
	if err != nil {
		return "", false, fmt.Errorf("reply token %s: %w", id, err)
	}
	if gen >= 0 && t.Reply != taken && !s.forgedToken(t, channel, id, gen) {
		return t.Reply, false, nil // reserved, or renewed, already
	}
	if gen+1 >= maxGen {
		return "", false, fmt.Errorf("reply token %s: more than %d renewals", id, maxGen)
	}
	return s.publishToken(d, channel, id, gen+1, reply)
}

// publishToken publishes token gen naming reply, or, if another poster
// published it first, returns the id that one names.
func (s *Store) publishToken(d Dir, channel, id string, gen int, reply string) (string, bool, error) {
	t := Token{Reply: reply, Owner: s.Self, Time: s.now()}
	t.Signature = s.Signer.Sign(t.Payload(channel, s.Self.Agent, id, gen))
	data, err := json.Marshal(t)
	if err != nil {
		return "", false, err
	}
	err = d.Publish(tokenName(id, gen), data, 0o666)
	if err == nil {
		return reply, true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return "", false, fmt.Errorf("reply token %s: %w", id, err)
	}
	first, err := readToken(d, tokenName(id, gen))
	if err != nil {
		return "", false, fmt.Errorf("reply token %s: %w", id, err)
	}
	return first.Reply, false, nil
}

// tokenName is the file of reply token gen of message id.
func tokenName(id string, gen int) string {
	if gen == 0 {
		return id + ".reply"
	}
	return id + ".reply." + strconv.Itoa(gen)
}

// currentToken reads the highest reply token of message id; gen is -1
// when there is none.
func currentToken(d Dir, id string) (t Token, gen int, err error) {
	return highest("reply tokens", func(g int) (Token, error) { return readToken(d, tokenName(id, g)) })
}

func readToken(d Dir, name string) (Token, error) {
	raw, _, err := d.ReadFile(name, maxFile)
	if err != nil {
		return Token{}, err
	}
	var t Token
	if err := json.Unmarshal(raw, &t); err != nil || t.Reply == "" {
		return Token{}, fmt.Errorf("unreadable token %s: %v", name, err)
	}
	return t, nil
}

// Read returns the claim of message id, if any.
func (s *Store) Read(channel, id string) (Claim, error) {
	d, err := s.dir(channel, id, false)
	if err != nil {
		return Claim{}, err
	}
	defer d.Close()
	c, gen, err := current(d, id)
	if err == nil && gen < 0 {
		err = pathErr(id, fs.ErrNotExist)
	}
	return c, err
}

// Token returns the highest reply token of message id, if any.
func (s *Store) Token(channel, id string) (Token, error) {
	d, err := s.dir(channel, id, false)
	if err != nil {
		return Token{}, err
	}
	defer d.Close()
	t, gen, err := currentToken(d, id)
	if err == nil && gen < 0 {
		err = &fs.PathError{Op: "read", Path: tokenName(id, 0), Err: fs.ErrNotExist}
	}
	return t, err
}

func publish(d Dir, name string, c Claim) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return d.Publish(name, data, 0o666)
}

func read(d Dir, name string) (Claim, []byte, error) {
	raw, fi, err := d.ReadFile(name, maxFile)
	if err != nil {
		return Claim{}, nil, err
	}
	var c Claim
	if err := json.Unmarshal(raw, &c); err != nil || !knownStatus(c.Status) {
		// A torn or foreign claim: a working claim with no owner whose
		// heartbeat is the file's modification time. An NFS or FUSE client
		// can show a claim short while its owner replaces it for a
		// heartbeat, so it is taken over only once it has not changed for
		// the grace period, as a silent owner's claim is.
		return Claim{Status: Working, Heartbeat: fi.ModTime().UTC(), torn: true}, raw, nil
	}
	return c, raw, nil
}

func knownStatus(s string) bool {
	return s == Working || s == Replied || s == Failed || s == Skipped
}

func pathErr(id string, err error) error {
	return &fs.PathError{Op: "read", Path: id + ".json", Err: err}
}
