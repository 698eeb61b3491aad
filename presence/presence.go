// Package presence reads and writes agent heartbeats: one JSON file per
// agent at ROOT/signals/presence/AGENT.json (docs/protocol.md#presence).
//
// # Files
//
// A watcher rewrites its agent's file at a fixed interval ([Interval]) and
// whenever its state changes. [Write] replaces the file atomically (a
// dot-prefixed temp file, fsync, rename, directory fsync; see package
// safedir), so a reader on any host sees the old heartbeat or the new one,
// never a mix. The file name is the agent: "codex.json" is codex's heartbeat,
// and a file whose agent_id names someone else is skipped.
//
//	{"agent_id": "codex", "timestamp": "2026-01-11T16:30:00.000Z",
//	 "state": "AWAKE", "substate": "IDLE", "watcher_pid": 12345,
//	 "channel": "agent-os-paper", "host": "vm-2"}
//
// collab's extensions (channels, message_id, started, last_reply, queue,
// counters, backlog, oldest_unanswered, instance, live) are written only when set; unknown fields are kept verbatim and
// written back, after the known ones.
//
// # Reading
//
// [ReadAll] reads every *.json file of the folder. Dot-files (in-flight
// writes) and other names are ignored; a file that is not a regular file, is
// a symlink (never followed), is larger than [MaxSize], has a name that is
// not a valid agent name, or does not decode is skipped and reported as an
// [agentfiles.Skip], never fatal. A file that does not decode is first read
// again a few times over about 150 ms: a foreign writer may be rewriting it
// in place, and a stale NFS attribute cache can give a short read that a
// new open revalidates. A missing folder means no agents. Decoding is
// liberal: state and substate in any case, watcher_pid as a number or a
// string, a missing agent_id taken from the file name; a state other than
// AWAKE or OFFLINE is malformed.
//
// # Signatures
//
// A watcher with a key signs its heartbeats (package signing, kind
// "presence"). The signed fields, in this order, each as written (a
// missing one is ""):
//
//	agent (the file's name, which agent_id must equal), timestamp, state,
//	substate, watcher_pid (decimal, "0" when unknown), channel, host,
//	channels (joined with ","), message_id, started, last_reply,
//	queue (decimal), counters (compact JSON, keys sorted; "{}" when none)
//
// then optional groups, each appended only when it or a later one is set
// (so heartbeats written before a group existed still verify; an unset
// group before a set one is "0" and ""): backlog (decimal) and
// oldest_unanswered; instance; and live: sessions, max, rss_bytes (each
// decimal), the number of processes listed, then each one's key, pid and
// rss_bytes (decimal, "0" when absent).
//
// Unknown fields are not signed. [Status.Verify] checks a heartbeat read
// from the file of an agent; [VerifyAll] checks many in parallel.
//
// # Liveness
//
// [Status.Effective] turns a heartbeat into what a user needs to know:
// AWAKE/IDLE, AWAKE/WORKING, STALE or OFFLINE. An AWAKE heartbeat older than
// the staleness limit is STALE: its watcher died without saying goodbye, or
// its host lost the mount. An AWAKE heartbeat written on this host whose
// watcher_pid is not running is STALE at once. A PID is only ever checked on
// the host that wrote it: on any other host the same number is some other
// process, or none.
//
// # Caveats
//
//   - Ages compare the writer's clock with the reader's. A timestamp in the
//     future (a writer whose clock is ahead) counts as fresh up to
//     [MaxSkew]; further ahead it is [Ahead], not awake, since it would
//     stay fresh long after its watcher died. Keep hosts in NTP sync.
//   - "This host" means the same hostname, compared without regard to case.
//     Two hosts with one name, or a watcher in a container with its own PID
//     namespace but the host's name, defeat the PID rule: such a watcher
//     looks dead to a reader outside the container. Give hosts and
//     containers distinct names.
//   - A PID reused by another process after the watcher died keeps the agent
//     AWAKE until the heartbeat goes stale.
package presence

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/agentfiles"
	"github.com/collabdev/collab/internal/plumbing/jsonobj"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// The values of the state field.
const (
	StateAwake   = "AWAKE"
	StateOffline = "OFFLINE"
)

// The values of the substate field while AWAKE.
const (
	SubIdle      = "IDLE"      // waiting for messages
	SubWorking   = "WORKING"   // a message has been taken; see Status.MessageID
	SubWaiting   = "WAITING"   // idle, with a job awaiting someone's answer
	SubThrottled = "THROTTLED" // the daily budget is spent; messages wait
	SubLive      = "LIVE"      // a person's own CLI session, joined to the bus (collab join); see Status.Joined
)

// The effective states [Status.Effective] returns.
const (
	AwakeIdle      = "AWAKE/IDLE"
	AwakeWorking   = "AWAKE/WORKING"
	AwakeWaiting   = "AWAKE/WAITING"
	AwakeThrottled = "AWAKE/THROTTLED"
	AwakeLive      = "AWAKE/LIVE"
	Stale          = "STALE"
	Ahead          = "AHEAD" // dated in the future beyond MaxSkew: the writer's clock is ahead
	Offline        = "OFFLINE"
)

// Interval is how often a watcher should rewrite its heartbeat.
const Interval = 10 * time.Second

// DefaultStaleAfter is the age after which an AWAKE heartbeat is STALE.
//
// A reader on another NFS client can see a file up to 60 s late (the default
// acregmax and acdirmax of the Linux client cache attributes and directory
// entries for up to 60 s), and a heartbeat is up to [Interval] old when it is
// written over. 90 s covers both with room for one missed beat and a few
// seconds of clock skew, so a healthy agent is never shown as STALE, and a
// dead one is within a minute and a half.
const DefaultStaleAfter = 90 * time.Second

// MaxSkew is how far in the future a heartbeat may be dated (a writer's
// clock ahead of the reader's) and still count as fresh. Beyond it the
// heartbeat says nothing about whether its watcher is alive: it would stay
// fresh long after the watcher died.
const MaxSkew = time.Minute

// MaxSize is the largest presence file read.
const MaxSize = 64 << 10

// TimeFormat is the layout of a heartbeat's timestamp (UTC).
const TimeFormat = "2006-01-02T15:04:05.000Z"

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("presence: malformed status")

// Status is one agent's heartbeat.
type Status struct {
	AgentID    string
	Timestamp  string // as written; see Time. Write fills in the time if empty.
	State      string // StateAwake or StateOffline
	Substate   string // SubIdle or SubWorking while AWAKE
	WatcherPID int    // 0: unknown
	Channel    string // the (first) channel watched
	Host       string // the watcher's hostname

	// Optional, written only when set.
	Channels  []string         // every channel watched, when more than one
	MessageID string           // the message being worked on while WORKING
	Started   string           // when the watcher started, in TimeFormat
	LastReply string           // id of the last message the agent posted
	Queue     int              // messages taken but not yet answered
	Counters  map[string]int64 // running totals, such as "handled", "failed"
	// Backlog counts the messages addressed to the agent that its watcher
	// holds unanswered: queued, and the one its CLI works on.
	// OldestUnanswered is the time of the oldest of them, in TimeFormat.
	Backlog          int
	OldestUnanswered string
	// Instance is the id of the watcher process (a UUIDv7 made at its
	// start): two watchers of one agent, or one watcher and its restart,
	// are told apart by it (job records name it too).
	Instance string
	// Live is what the watcher's warm CLI processes hold (collab watch
	// --live); nil without them.
	Live *Live
	// Joined is the person's session of a joined agent (collab join);
	// nil for a watcher.
	Joined *Joined

	// Signature is the watcher's signature (see Sign), nil when unsigned.
	Signature *signing.Signature

	// Extra holds unknown fields, kept verbatim.
	Extra map[string]json.RawMessage
}

// FormatTime formats t as a heartbeat timestamp.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// Time returns the heartbeat's time and whether its timestamp parses. Any
// RFC 3339 time is accepted, and one without a zone is taken as UTC.
func (s Status) Time() (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s.Timestamp); err == nil {
		return t, true
	}
	if t, err := time.Parse("2006-01-02T15:04:05.999999999", s.Timestamp); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// Age returns how long ago the heartbeat was written, negative if its time
// is in the future, and false if its timestamp does not parse.
func (s Status) Age(now time.Time) (time.Duration, bool) {
	t, ok := s.Time()
	if !ok {
		return 0, false
	}
	return now.Sub(t), true
}

// Effective returns the agent's effective state at now: [AwakeIdle],
// [AwakeWorking], [AwakeWaiting], [AwakeThrottled], [Stale], [Ahead] or
// [Offline].
//
// An AWAKE heartbeat is [Stale] when it is older than staleAfter (≤ 0 means
// [DefaultStaleAfter]) or its timestamp does not parse, or when its host is
// localHost and alive (if not nil) reports its watcher_pid dead. The PID is
// checked only then: never for another host, an empty host or localHost, or
// an unknown PID (0). A timestamp in the future is fresh up to [MaxSkew];
// further ahead, an AWAKE heartbeat is [Ahead], which is not awake.
func (s Status) Effective(now time.Time, staleAfter time.Duration, localHost string, alive func(pid int) bool) string {
	if !strings.EqualFold(s.State, StateAwake) {
		return Offline
	}
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	age, ok := s.Age(now)
	if !ok || age > staleAfter {
		return Stale
	}
	if age < -MaxSkew {
		return Ahead
	}
	if alive != nil && s.WatcherPID > 0 && s.Host != "" && strings.EqualFold(s.Host, localHost) && !alive(s.WatcherPID) {
		return Stale
	}
	switch {
	case strings.EqualFold(s.Substate, SubWorking):
		return AwakeWorking
	case strings.EqualFold(s.Substate, SubWaiting):
		return AwakeWaiting
	case strings.EqualFold(s.Substate, SubThrottled):
		return AwakeThrottled
	case strings.EqualFold(s.Substate, SubLive):
		return AwakeLive
	}
	return AwakeIdle
}

// Write atomically replaces the heartbeat of s.AgentID, creating the
// presence folder if needed. An empty Timestamp is written as the current
// time. A write that fails at any step (a full disk, a size limit) leaves
// the previous heartbeat whole and no temp file behind.
func Write(root tree.Root, s Status) error {
	if err := tree.CheckName("agent", s.AgentID); err != nil {
		return err
	}
	if !strings.EqualFold(s.State, StateAwake) && !strings.EqualFold(s.State, StateOffline) {
		return fmt.Errorf("write presence of %s: state %q is neither %s nor %s", s.AgentID, s.State, StateAwake, StateOffline)
	}
	if s.Timestamp == "" {
		s.Timestamp = FormatTime(time.Now())
	}
	data, err := s.Encode()
	if err != nil {
		return fmt.Errorf("write presence of %s: %w", s.AgentID, err)
	}
	d, err := safedir.Create(root.Presence())
	if err != nil {
		return fmt.Errorf("write presence of %s: %w", s.AgentID, err)
	}
	defer d.Close()
	if err := d.Replace(agentfiles.Name(s.AgentID), data, 0o666); err != nil {
		return fmt.Errorf("write presence of %s: %w", s.AgentID, err)
	}
	return nil
}

// ReadAll reads every heartbeat, sorted by agent, and reports the files it
// skipped. A missing presence folder is no heartbeats; only a folder that
// cannot be listed is an error.
func ReadAll(root tree.Root) ([]Status, []agentfiles.Skip, error) {
	var all []Status
	skips, err := agentfiles.Each(root.Presence(), func(d *safedir.Dir, agent string) error {
		s, err := read(d, agent)
		if err == nil {
			all = append(all, s)
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read presence: %w", err)
	}
	slices.SortFunc(all, func(a, b Status) int { return strings.Compare(a.AgentID, b.AgentID) })
	return all, skips, nil
}

// Read reads one agent's heartbeat. No heartbeat is an error that wraps
// fs.ErrNotExist.
func Read(root tree.Root, agent string) (Status, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return Status{}, err
	}
	d, err := safedir.Open(root.Presence())
	if err != nil {
		return Status{}, fmt.Errorf("read presence of %s: %w", agent, err)
	}
	defer d.Close()
	s, err := read(d, agent)
	if err != nil {
		return Status{}, fmt.Errorf("read presence of %s: %w", agent, err)
	}
	return s, nil
}

// rereads are the pauses before each new read of a presence file that did
// not parse: a foreign writer may be writing it in place, and a stale NFS
// attribute cache can give a short read that a new open revalidates.
var rereads = []time.Duration{10 * time.Millisecond, 40 * time.Millisecond, 100 * time.Millisecond}

func read(d *safedir.Dir, agent string) (Status, error) {
	for i := 0; ; i++ {
		data, _, err := d.ReadFile(agentfiles.Name(agent), MaxSize)
		if err != nil {
			return Status{}, err
		}
		s, err := Decode(data, agent)
		if err == nil || i == len(rereads) {
			return s, err
		}
		time.Sleep(rereads[i])
	}
}

// Decode parses a presence file's contents. agent, the name the file is
// for, fills in a missing agent_id; a different agent_id is an error. An
// empty agent checks nothing.
func Decode(data []byte, agent string) (Status, error) {
	var s Status
	if err := json.Unmarshal(data, &s); err != nil {
		return Status{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if s.AgentID == "" {
		s.AgentID = agent
	}
	if agent != "" && s.AgentID != agent {
		return Status{}, fmt.Errorf("%w: agent_id %q in the file of %q", ErrMalformed, s.AgentID, agent)
	}
	if !strings.EqualFold(s.State, StateAwake) && !strings.EqualFold(s.State, StateOffline) {
		return Status{}, fmt.Errorf("%w: state %q is neither %s nor %s", ErrMalformed, s.State, StateAwake, StateOffline)
	}
	return s, nil
}

// Encode returns the heartbeat as written to its file. Unlike json.Marshal,
// it leaves <, > and & unescaped.
func (s Status) Encode() ([]byte, error) { return s.MarshalJSON() }

// known lists the fields Status decodes; Extra never shadows them.
var known = []string{
	"agent_id", "timestamp", "state", "substate", "watcher_pid", "channel", "host",
	"channels", "message_id", "started", "last_reply", "queue", "counters",
	"backlog", "oldest_unanswered", "instance", "live", "joined", signing.Field,
}

// MarshalJSON implements json.Marshaler: the seed's fields in the seed's
// order, collab's extensions when set, then unknown fields by name.
func (s Status) MarshalJSON() ([]byte, error) {
	var w jsonobj.Writer
	w.Field("agent_id", s.AgentID)
	w.Field("timestamp", s.Timestamp)
	w.Field("state", s.State)
	w.Field("substate", s.Substate)
	w.Field("watcher_pid", s.WatcherPID)
	w.Field("channel", s.Channel)
	w.Field("host", s.Host)
	if len(s.Channels) > 0 {
		w.Field("channels", s.Channels)
	}
	if s.MessageID != "" {
		w.Field("message_id", s.MessageID)
	}
	if s.Started != "" {
		w.Field("started", s.Started)
	}
	if s.LastReply != "" {
		w.Field("last_reply", s.LastReply)
	}
	if s.Queue != 0 {
		w.Field("queue", s.Queue)
	}
	if len(s.Counters) > 0 {
		w.Field("counters", s.Counters)
	}
	if s.Backlog != 0 {
		w.Field("backlog", s.Backlog)
	}
	if s.OldestUnanswered != "" {
		w.Field("oldest_unanswered", s.OldestUnanswered)
	}
	if s.Instance != "" {
		w.Field("instance", s.Instance)
	}
	if s.Live != nil {
		w.Field("live", s.Live)
	}
	if s.Joined != nil {
		w.Field("joined", s.Joined)
	}
	if s.Signature != nil {
		w.Field(signing.Field, s.Signature)
	}
	w.Extra(s.Extra, known...)
	return w.Bytes()
}

// UnmarshalJSON implements json.Unmarshaler. It does not apply Decode's
// defaults or checks.
func (s *Status) UnmarshalJSON(b []byte) error {
	f, err := jsonobj.Parse(b)
	if err != nil {
		return err
	}
	*s = Status{}
	var pid, queue, backlog json.RawMessage
	err = errors.Join(
		f.Take("agent_id", &s.AgentID),
		f.Take("timestamp", &s.Timestamp),
		f.Take("state", &s.State),
		f.Take("substate", &s.Substate),
		f.Take("watcher_pid", &pid),
		f.Take("channel", &s.Channel),
		f.Take("host", &s.Host),
		f.Take("channels", &s.Channels),
		f.Take("message_id", &s.MessageID),
		f.Take("started", &s.Started),
		f.Take("last_reply", &s.LastReply),
		f.Take("queue", &queue),
		f.Take("counters", &s.Counters),
		f.Take("backlog", &backlog),
		f.Take("oldest_unanswered", &s.OldestUnanswered),
	)
	f.Lenient("instance", &s.Instance)
	f.Lenient("live", &s.Live)
	f.Lenient("joined", &s.Joined)
	f.Lenient(signing.Field, &s.Signature)
	s.WatcherPID = count(pid)
	s.Queue = count(queue)
	s.Backlog = count(backlog)
	s.Extra = f.Rest()
	return err
}

// count reads a non-negative integer liberally: 12, 12.0 and "12" are 12;
// anything else, negative or beyond 32 bits is 0 (unknown).
func count(v json.RawMessage) int {
	var s string
	if json.Unmarshal(v, &s) != nil {
		s = string(v)
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || n < 0 || n > 1<<31-1 || n != float64(int(n)) {
		return 0
	}
	return int(n)
}
