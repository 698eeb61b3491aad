// Package sessions keeps the records of delegated sessions: an agent
// (the delegator) that hands work to a new agent working in its own git
// worktree on its own branch and channel (collab delegate, the MCP tool
// delegate_to_worktree, collab task claim --worktree).
//
// # Records
//
// A session is ROOT/delegations/ID.json, one JSON object ([Session]),
// created exclusively by the delegating command ([Create]: two delegators
// never get one ID) and replaced atomically by whoever changes its status
// ([Update]: the delegating command, delegate stop and rm, collab resume).
// The record is the one owner of a session's facts: its agent, worktree,
// branch, base, channel, the watcher's arguments and the process running
// it. Records are never deleted but by the command that created them when
// it fails before the session started ([Delete]); a removed session keeps
// its record with status "removed", so an ID is never reused.
//
// # Names
//
// ID is [IDLen] random hex digits ([NewID]). The delegated agent is
// NAME-ID ([AgentID]), NAME the delegator's id (its NAME part when it is a
// workflow agent NAME--INSTANCE) cut so the whole fits [tree.MaxNameLen];
// its channel is delegate-ID ([Channel]).
//
// # Keys
//
// A delegated agent signs with a key of its own, never its delegator's:
// the delegation makes it (Key, PublicKey), and it verifies only once the
// tree's admin trusts it (collab key trust); until then the agent is, to
// readers, an agent without keys. It runs under the delegator's account,
// so that account's files, the delegator's key among them, stay readable
// to it: what is kept from it is the key itself being handed over (in its
// environment, as its COLLAB_KEY).
//
// # Limits
//
// A delegated agent's environment carries its depth ([EnvDepth]: 1 for an
// agent a person delegated to, 2 for one that agent delegated to, …).
// [CheckLimits] refuses a delegator whose depth is already the maximum
// (default [DefaultMaxDepth]) and one with [DefaultMaxConcurrent] active
// sessions (starting or running). Both refusals are a [*LimitError].
//
// # Trust
//
// A record is not signed: it is written by the delegating command, not by
// a watcher on behalf of its agent, and what others see of the agent
// (presence, replies) is signed as any watcher's. Records are written
// with mode [RecordPerm] (0644 at most, whatever the umask): only their
// owner can change them. What acts on a record's paths and processes
// (collab delegate stop and rm, collab resume, the dashboard's stop) acts
// only on a record that [Check] passes, judged on the file it was read
// from: owned by the account acting (another account's is
// [ErrForeign]), and a regular file, writable by no one else, with no
// other name ([ErrUnsafe]: another account could have set its contents,
// its env and args, what resume runs). A record from before this rule,
// written group-writable, is refused until its owner has checked it and
// run chmod go-w on it. A recorded pid is signalled only while its
// process group carries the session's [EnvSession].
//
// # Cost
//
// [Read] reads one record; [List] and [CheckLimits] read the folder's
// records, each bounded by [MaxRecord] bytes: one file per session ever
// made in this tree.
package sessions

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/plumbing/randhex"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Statuses of a session.
const (
	Starting = "starting" // the delegate command is setting it up
	Running  = "running"  // its watcher runs (or should: collab resume restarts it)
	Stopped  = "stopped"  // delegate stop ended it; its worktree is kept
	Failed   = "failed"   // its watcher could not be started
	Removed  = "removed"  // delegate rm ended it and removed its worktree
)

// Environment variables of a delegated agent's watcher and of its CLI.
const (
	EnvDepth       = "COLLAB_DELEGATION_DEPTH" // the agent's depth, 1 or more
	EnvWorktree    = "COLLAB_WORKTREE"         // the worktree it works in
	EnvBranch      = "COLLAB_BRANCH"           // its branch
	EnvDelegatedBy = "COLLAB_DELEGATED_BY"     // the delegator's agent id
	EnvSession     = "COLLAB_SESSION"          // the session ID
)

// Defaults of the limits.
const (
	DefaultMaxDepth      = 2
	DefaultMaxConcurrent = 4
)

// IDLen is the number of hex digits of a session ID.
const IDLen = 4

// MaxRecord bounds one record read.
const MaxRecord = 1 << 20

// Errors.
var (
	ErrNotFound    = errors.New("sessions: no such session")
	ErrExists      = errors.New("sessions: session exists")
	ErrDepth       = errors.New("sessions: delegation depth limit")
	ErrConcurrency = errors.New("sessions: concurrent sessions limit")
)

// LimitError is CheckLimits' refusal; it wraps ErrDepth or ErrConcurrency.
type LimitError struct {
	Err       error
	Delegator string
	Have, Max int // the depth or the number of active sessions, and the limit
}

func (e *LimitError) Error() string {
	if e.Err == ErrDepth {
		return fmt.Sprintf("delegation refused: %s is at delegation depth %d, the limit is %d (--max-depth)", e.Delegator, e.Have, e.Max)
	}
	return fmt.Sprintf("delegation refused: %s already has %d active delegated sessions, the limit is %d (--max-concurrent; stop or rm one)", e.Delegator, e.Have, e.Max)
}

func (e *LimitError) Unwrap() error { return e.Err }

// Session is a delegated session's record.
type Session struct {
	ID          string    `json:"id"`
	Agent       string    `json:"agent"`
	DelegatedBy string    `json:"delegated_by"`
	Depth       int       `json:"depth"` // the agent's: the delegator's + 1
	Repo        string    `json:"repo"`
	Worktree    string    `json:"worktree"`
	Branch      string    `json:"branch"`
	Base        string    `json:"base"`
	Channel     string    `json:"channel"`
	CLI         string    `json:"cli"`
	Cmd         string    `json:"cmd,omitempty"`
	Model       string    `json:"model,omitempty"`
	Title       string    `json:"title,omitempty"`
	Host        string    `json:"host"`
	PID         int       `json:"pid,omitempty"` // the detached watcher's
	Created     time.Time `json:"created"`
	Status      string    `json:"status"`
	Updated     time.Time `json:"updated,omitzero"`
	// Args are the collab watch arguments of its watcher, and Env the
	// variables added to its environment: what collab resume runs again.
	Args []string `json:"args,omitempty"`
	Env  []string `json:"env,omitempty"`
	Log  string   `json:"log,omitempty"` // its watcher's output, a file in ROOT/logs
	// Key is the private key file the agent signs with, made for it by
	// the delegation (in the delegator's key folder, mode 0600), and
	// PublicKey its public key, which only the tree's admin can trust.
	Key       string `json:"key,omitempty"`
	PublicKey string `json:"public_key,omitempty"`

	file FileStat // what read saw of the record's file
}

// Active reports whether the session is starting or running.
func (s *Session) Active() bool { return s.Status == Starting || s.Status == Running }

// NewID is a new random session ID; [Create] says whether it is free.
func NewID() string { return randhex.String(IDLen / 2) }

// AgentID is the id of the agent of session id delegated by delegator.
func AgentID(delegator, id string) string {
	name := delegator
	if n, _, ok := strings.Cut(delegator, "--"); ok && n != "" {
		name = n
	}
	if max := tree.MaxNameLen - len(id) - 1; len(name) > max {
		name = strings.TrimRight(name[:max], "-")
	}
	return name + "-" + id
}

// Channel is the channel of session id.
func Channel(id string) string { return "delegate-" + id }

// CheckID checks that id has the shape of a session ID.
func CheckID(id string) error {
	if len(id) != IDLen || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return nil
}

func fileName(id string) string { return id + ".json" }

// Create writes s as a new record; ErrExists when its ID is taken.
func Create(root tree.Root, s *Session) error {
	if err := CheckID(s.ID); err != nil {
		return err
	}
	d, err := safedir.Create(root.Delegations())
	if err != nil {
		return fmt.Errorf("session record: %w", err)
	}
	defer d.Close()
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := d.Publish(fileName(s.ID), append(data, '\n'), RecordPerm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, s.ID)
		}
		return fmt.Errorf("session record: %w", err)
	}
	return nil
}

// Update replaces s's record, setting s.Updated.
func Update(root tree.Root, s *Session) error {
	if err := CheckID(s.ID); err != nil {
		return err
	}
	d, err := safedir.Open(root.Delegations())
	if err != nil {
		return fmt.Errorf("session record: %w", err)
	}
	defer d.Close()
	s.Updated = time.Now().UTC()
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := d.Replace(fileName(s.ID), append(data, '\n'), RecordPerm); err != nil {
		return fmt.Errorf("session record: %w", err)
	}
	return nil
}

// Delete removes s's record: only for the command that created it and
// failed before the session started.
func Delete(root tree.Root, id string) error {
	if err := CheckID(id); err != nil {
		return err
	}
	d, err := safedir.Open(root.Delegations())
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Remove(fileName(id))
}

// Read reads the record of session id; ErrNotFound when there is none.
func Read(root tree.Root, id string) (*Session, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	d, err := safedir.Open(root.Delegations())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return read(d, fileName(id))
}

func read(d *safedir.Dir, name string) (*Session, error) {
	data, fi, err := d.ReadFile(name, MaxRecord)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, strings.TrimSuffix(name, ".json"))
	}
	if err != nil {
		return nil, err
	}
	var s Session
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("session record %s: %w", name, err)
	}
	if s.ID+".json" != name {
		return nil, fmt.Errorf("session record %s: its id is %q", name, s.ID)
	}
	s.file = StatOf(fi)
	return &s, nil
}

// Find is the session whose ID or agent is key.
func Find(root tree.Root, key string) (*Session, error) {
	if CheckID(key) == nil {
		if s, err := Read(root, key); err == nil || !errors.Is(err, ErrNotFound) {
			return s, err
		}
	}
	all, err := List(root)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if all[i].Agent == key {
			return &all[i], nil
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
}

// List reads every record, oldest first; a bad one is skipped.
func List(root tree.Root) ([]Session, error) {
	var out []Session
	err := safedir.EachFile(root.Delegations(), ".json", func(d *safedir.Dir, name string) {
		if CheckID(strings.TrimSuffix(name, ".json")) != nil {
			return
		}
		if s, err := read(d, name); err == nil {
			out = append(out, *s)
		}
	})
	slices.SortFunc(out, func(a, b Session) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	return out, err
}

// CheckLimits refuses a delegation by delegator, itself at depth (0 for a
// person or an agent nobody delegated to), when depth >= maxDepth or when
// it has maxConcurrent active sessions. A limit <= 0 is not checked.
func CheckLimits(root tree.Root, delegator string, depth, maxDepth, maxConcurrent int) error {
	if maxDepth > 0 && depth >= maxDepth {
		return &LimitError{Err: ErrDepth, Delegator: delegator, Have: depth, Max: maxDepth}
	}
	if maxConcurrent <= 0 {
		return nil
	}
	n, err := CountActive(root, delegator)
	if err != nil {
		return err
	}
	if n >= maxConcurrent {
		return &LimitError{Err: ErrConcurrency, Delegator: delegator, Have: n, Max: maxConcurrent}
	}
	return nil
}

// CountActive is the number of delegator's active sessions. A delegation
// checks its limit with [CheckLimits] before it creates its record, and
// counts again after: with its own record counted, more than the limit
// means another delegation raced it, and it gives up (both may; neither
// goes over the limit).
func CountActive(root tree.Root, delegator string) (int, error) {
	all, err := List(root)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range all {
		if all[i].DelegatedBy == delegator && all[i].Active() {
			n++
		}
	}
	return n, nil
}

// Depth is the delegation depth in an environment: EnvDepth's value, 0
// when it is unset or not a number.
func Depth(getenv func(string) string) int {
	n, err := strconv.Atoi(getenv(EnvDepth))
	if err != nil || n < 0 {
		return 0
	}
	return n
}
