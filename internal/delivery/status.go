package delivery

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/registry"
	"github.com/collabdev/collab/presence"
)

// States of a message for one addressee (see the package doc).
const (
	Waiting       = "waiting"
	Seen          = "seen"
	Claimed       = "claimed"
	Running       = "running"
	AwaitingInput = "awaiting_input"
	Offered       = "offered" // a joined session handed it to its CLI
	Read          = "read"    // and the CLI's model received it
	Answered      = "answered"
	Refused       = "refused"
	Failed        = "failed"
	Undeliverable = "undeliverable"
)

// Final reports whether state is final: nothing more will happen.
func Final(state string) bool { return state == Answered || Bad(state) }

// Bad reports whether state is a final bad state: no answer will come.
func Bad(state string) bool {
	return state == Refused || state == Failed || state == Undeliverable || state == Expired
}

// Addressee is where a message stands for one agent.
type Addressee struct {
	Agent string    `json:"agent"`
	State string    `json:"state"`
	Since time.Time `json:"since,omitzero"` // when it entered State, as far as the files say
	// Presence is the agent's presence as who shows it (AWAKE/IDLE,
	// STALE, OFFLINE, …; "" without a heartbeat), for waiting and seen.
	Presence  string `json:"presence,omitempty"`
	Host      string `json:"host,omitempty"` // the watcher's, once seen
	PID       int    `json:"pid,omitempty"`
	Instance  string `json:"instance,omitempty"`
	Job       string `json:"job,omitempty"`
	JobStatus string `json:"job_status,omitempty"` // the job record's status, as written
	Reply     string `json:"reply,omitempty"`
	// Question is the question the running job asked mid-run and waits
	// on (awaiting_input): its message id; Note holds its text.
	Question string  `json:"question,omitempty"`
	Latency  float64 `json:"latency_seconds,omitempty"` // answered: reply time − message time
	Guard    string  `json:"guard,omitempty"`           // refused: which guard
	Error    string  `json:"error,omitempty"`           // failed: the error; refused: why
	Note     string  `json:"note,omitempty"`
	// Timeline is what happened to the message for the agent, stage by
	// stage ([TimelineFor]), with Options.Timeline.
	Timeline *Timeline `json:"timeline,omitempty"`
	// Report is the id of the delivery report sent to the message's
	// sender for this addressee (see "Delivery reports" in the package
	// doc), also once the message is answered after all.
	Report string `json:"report,omitempty"`
}

// Status is where a message stands for every addressee.
type Status struct {
	Channel string    `json:"channel"`
	ID      string    `json:"id"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Time    time.Time `json:"time"`
	// Broadcast: to all, naming no one; there is no addressee.
	Broadcast  bool        `json:"broadcast,omitempty"`
	Addressees []Addressee `json:"addressees"`
}

// AllBad reports whether every addressee is in a final bad state (and
// there is at least one).
func (s Status) AllBad() bool {
	for _, a := range s.Addressees {
		if !Bad(a.State) {
			return false
		}
	}
	return len(s.Addressees) > 0
}

// Options tune [Of] and [For]; the zero value works.
type Options struct {
	Now        func() time.Time   // default time.Now
	Host       string             // this host: presence PIDs are checked only here
	StaleAfter time.Duration      // default presence.DefaultStaleAfter
	Alive      func(pid int) bool // default proc.PIDAlive
	// Verifier, if set, judges seen files and registry entries: a seen
	// file that does not verify as its agent's while the agent has keys
	// is ignored, and so is a forged registry entry
	// (registry.KnownTo): it neither names an addressee nor keeps a
	// message waiting rather than undeliverable.
	Verifier *signing.Verifier
	// Timeline fills each addressee's Timeline ([For]).
	Timeline bool
}

// Of reads message id of channel ch and returns its status.
func Of(root tree.Root, ch, id string, opt Options) (Status, error) {
	m, err := channel.Lookup(root, ch, id)
	if err != nil {
		return Status{}, err
	}
	return For(root, ch, &m, opt), nil
}

// For returns the status of m, a message of channel ch.
func For(root tree.Root, ch string, m *channel.Message, opt Options) Status {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Alive == nil {
		opt.Alive = proc.PIDAlive
	}
	id := m.Key()
	s := Status{Channel: ch, ID: id, From: m.From, To: m.To, Time: m.Time(), Addressees: []Addressee{}}
	// An agent of a workflow instance is also named by its alias in
	// the instance's channel (package workflow's "Aliases").
	names := AddresseesIn(m, func(a string) bool { return registry.KnownTo(root, a, opt.Verifier) }, workflow.Aliases(root, ch))
	if len(names) == 0 {
		s.Broadcast = true
		return s
	}
	for _, a := range names {
		st := withReport(root, ch, m, state(root, ch, m, a, opt), opt.Verifier)
		if opt.Timeline {
			tl := TimelineFor(root, ch, m, a, opt)
			st.Timeline = &tl
		}
		s.Addressees = append(s.Addressees, st)
	}
	return s
}

// Addressees returns the agents m is for, in order: to, the @mentions,
// the first word of the first line if known says it is an agent. Only
// names for which m.IsFor holds are kept, each once.
func Addressees(m *channel.Message, known func(agent string) bool) []string {
	return AddresseesIn(m, known, nil)
}

// AddresseesIn is Addressees in a channel whose aliases (alias → agent id,
// [workflow.Aliases]) name agents of a workflow instance: a name that is
// an alias stands for its agent, for which m.IsForAny(id, alias) holds.
func AddresseesIn(m *channel.Message, known func(agent string) bool, aliases map[string]string) []string {
	var out []string
	add := func(a string) {
		if tree.CheckName("agent", a) != nil {
			return
		}
		if id, ok := alias(aliases, a); ok {
			if !m.IsForAny(id, a) {
				return
			}
			a = id
		} else if !m.IsFor(a) {
			return
		}
		for _, b := range out {
			if strings.EqualFold(a, b) {
				return
			}
		}
		out = append(out, a)
	}
	if m.To != channel.Broadcast && m.To != "" {
		add(m.To)
	}
	text := m.Content.Text
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || (i > 0 && tree.NameByte(text[i-1])) {
			continue
		}
		name := nameAt(text[i+1:])
		if _, ok := alias(aliases, name); !ok && name != "" && !known(name) && known(strings.ToLower(name)) {
			name = strings.ToLower(name)
		}
		add(name)
	}
	line, _, _ := strings.Cut(text, "\n")
	if first := nameAt(strings.TrimLeft(line, " \t\r")); first != "" {
		_, isAlias := alias(aliases, first)
		switch {
		case isAlias || known(first):
			add(first)
		case known(strings.ToLower(first)):
			add(strings.ToLower(first))
		}
	}
	return out
}

// alias looks name up in aliases, ignoring case as mentions do.
func alias(aliases map[string]string, name string) (id string, ok bool) {
	if id, ok = aliases[name]; ok {
		return id, true
	}
	id, ok = aliases[strings.ToLower(name)]
	return id, ok
}

// nameAt returns the run of name bytes s starts with.
func nameAt(s string) string {
	n := 0
	for n < len(s) && tree.NameByte(s[n]) {
		n++
	}
	return s[:n]
}

// StateFor is where m, a message of channel ch, stands for agent, whether
// or not m names agent (a workflow agent is addressed by its alias).
func StateFor(root tree.Root, ch string, m *channel.Message, agent string, opt Options) Addressee {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Alive == nil {
		opt.Alive = proc.PIDAlive
	}
	return withReport(root, ch, m, state(root, ch, m, agent, opt), opt.Verifier)
}

// withReport adds to a the report sent for it, if any: a message still
// unclaimed whose report says it expired is expired. With v, a mark that
// does not verify as its decider's while the decider has keys is ignored.
func withReport(root tree.Root, ch string, m *channel.Message, a Addressee, v *signing.Verifier) Addressee {
	k, err := ReadReport(root, ch, a.Agent, m.Key())
	if err != nil || (v != nil && k.Verify(v) != signing.Verified && v.HasKeys(k.DecidedBy)) {
		return a
	}
	a.Report = k.ID
	if k.State == Expired && (a.State == Waiting || a.State == Seen) {
		a.State, a.Since, a.Note = Expired, k.Time, k.Reason
	}
	return a
}

// state is where m stands for agent.
func state(root tree.Root, ch string, m *channel.Message, agent string, opt Options) Addressee {
	id := m.Key()
	a := Addressee{Agent: agent}
	seen, err := ReadSeen(root, ch, agent, id)
	hasSeen := err == nil && seen.Agent == agent
	if hasSeen && opt.Verifier != nil && seen.Verify(opt.Verifier, ch, agent, id) != signing.Verified && opt.Verifier.HasKeys(agent) {
		hasSeen = false
	}
	store := &claim.Store{Root: root, Self: claim.Owner{Agent: agent}}
	c, cerr := store.Read(ch, id)
	hasClaim := cerr == nil
	var mark SeenFile // a joined session's offered or read mark, when there is no claim
	if !hasClaim && !(hasSeen && seen.Guard != "") {
		mark = joinedMark(root, ch, agent, id, opt.Verifier)
	}
	if hasClaim {
		a.Host, a.PID, a.Instance = c.Owner.Host, c.Owner.PID, c.Owner.Instance
	}
	switch {
	case hasSeen && seen.Guard != "":
		a.State, a.Guard, a.Error, a.Since = Refused, seen.Guard, seen.Why, seen.Time
		a.Host, a.PID, a.Instance = seen.Host, seen.PID, seen.Instance
	case hasClaim && c.Status == claim.Failed:
		a.State, a.Since, a.Error, a.Reply = Failed, c.Heartbeat, c.Note, c.Reply
		if j, ok := findJob(root, agent, ch, id); ok {
			a.Job, a.JobStatus = j.ID, j.Status
			if a.Error == "" {
				a.Error = j.Error
			}
		}
	case hasClaim && c.Status == claim.Skipped:
		if g, why, ok := ParseRefusal(c.Note); ok {
			a.State, a.Guard, a.Error, a.Since = Refused, g, why, c.Heartbeat
		} else {
			a.State, a.Since, a.Note = Answered, c.Heartbeat, c.Note
		}
	case hasClaim && c.Status == claim.Replied:
		answered(root, ch, m, &a, c.Reply, c.Heartbeat)
	case hasClaim:
		if t, err := store.Token(ch, id); err == nil {
			if r, err := channel.Lookup(root, ch, t.Reply); err == nil && r.Metadata.InReplyTo == id && r.From == agent {
				answered(root, ch, m, &a, t.Reply, r.Time())
				return a
			}
		}
		a.State, a.Since = Claimed, c.Claimed
		if j, ok := findJob(root, agent, ch, id); ok && j.Status != jobs.Completed {
			a.Job, a.JobStatus = j.ID, j.Status
			switch {
			case j.AskingMidRun():
				a.State, a.Since, a.Question = AwaitingInput, askedAt(&j), j.Asked
				if j.Question != nil {
					a.Note = j.Question.Text
				}
			case j.Status != jobs.Failed && j.Status != jobs.Killed && j.Status != jobs.Interrupted:
				// running, awaiting input, or a status this version
				// does not know (shown as written): the job runs.
				a.State, a.Since = Running, j.Started
			}
		}
	case mark.Kind != "":
		a.State, a.Since = mark.Kind, mark.Time // Read or Offered
		a.Host, a.PID, a.Instance = mark.Host, mark.PID, mark.Instance
	case hasSeen:
		a.State, a.Since = Seen, seen.Time
		a.Host, a.PID, a.Instance = seen.Host, seen.PID, seen.Instance
		a.Presence = presenceOf(root, agent, opt)
	case !registry.KnownTo(root, agent, opt.Verifier):
		a.State = Undeliverable
		a.Note = "no registry entry and no presence file"
		if registry.Known(root, agent) {
			a.Note = "no presence file, and its registry entry does not verify"
		}
	default:
		a.State, a.Since = Waiting, m.Time()
		a.Presence = presenceOf(root, agent, opt)
	}
	return a
}

// answered sets a to answered by reply, looked up for its latency. A
// reply this host cannot read yet (another host's file, not yet through
// the mount's attribute cache) is timed by at, when its claim or token
// recorded it.
func answered(root tree.Root, ch string, m *channel.Message, a *Addressee, reply string, at time.Time) {
	a.State, a.Reply, a.Since = Answered, reply, at
	if reply == "" {
		return
	}
	if r, err := channel.Lookup(root, ch, reply); err == nil {
		a.Since = r.Time()
	}
	if d := a.Since.Sub(m.Time()); d > 0 {
		a.Latency = d.Seconds()
	}
}

// joinedMark is the read mark of message id for agent, else its offered
// mark (Kind "" when there is neither): a mark that does not verify as
// agent's while the agent has keys is ignored.
func joinedMark(root tree.Root, ch, agent, id string, v *signing.Verifier) SeenFile {
	for _, kind := range []string{KindRead, KindOffered} {
		m, err := ReadMark(root, kind, ch, agent, id)
		if err != nil || m.Agent != agent {
			continue
		}
		if v != nil && m.Verify(v, ch, agent, id) != signing.Verified && v.HasKeys(agent) {
			continue
		}
		return m
	}
	return SeenFile{}
}

// askedAt is when job j asked the question it waits on: its last
// needs_input event, else its start.
func askedAt(j *jobs.Job) time.Time {
	for i := len(j.Events) - 1; i >= 0; i-- {
		if j.Events[i].Kind == modelcli.EventNeedsInput {
			return j.Events[i].Time
		}
	}
	return j.Started
}

// presenceOf is the agent's presence as who shows it; "" without one.
func presenceOf(root tree.Root, agent string, opt Options) string {
	p, err := presence.Read(root, agent)
	if err != nil {
		return ""
	}
	return p.Effective(opt.Now(), opt.StaleAfter, opt.Host, opt.Alive)
}

// findJob finds the job of message id of channel ch among agent's jobs.
func findJob(root tree.Root, agent, ch, id string) (jobs.Job, bool) {
	j, err := jobs.ForMessage(root, agent, ch, id)
	if err != nil {
		return jobs.Job{}, false
	}
	if j.Status == jobs.Running {
		// A running record whose watcher is gone is interrupted.
		j.Status = jobs.Observe(root, agent, presence.DefaultStaleAfter).Status(j)
	}
	return j, true
}

// ErrNotFound is returned by [FindChannel] when no channel holds the
// message.
var ErrNotFound = errors.New("delivery: no channel holds the message")

// FindChannel returns the channel that holds message id: one stat per
// channel folder.
func FindChannel(root tree.Root, id string) (string, error) {
	if _, err := channel.ParseID(id); err != nil {
		return "", fmt.Errorf("message id %q: %w", id, err)
	}
	d, err := safedir.Open(root.Channels())
	if err != nil {
		return "", err
	}
	defer d.Close()
	ents, err := d.ReadDir()
	if err != nil {
		return "", err
	}
	for _, e := range ents {
		ch := e.Name()
		if !e.IsDir() || tree.CheckName("channel", ch) != nil {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root.Channel(ch), id+".json")); err == nil {
			return ch, nil
		}
	}
	return "", fmt.Errorf("%w: %s", ErrNotFound, id)
}

// Describe says in a few words where the message stands for a, as of
// now, and names the delivery report sent for it.
func (a Addressee) Describe(now time.Time) string {
	d := a.describe(now)
	if a.Report != "" {
		d += "; reported to the sender (" + a.Report + ")"
	}
	return d
}

func (a Addressee) describe(now time.Time) string {
	ago := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return " " + now.Sub(t).Round(time.Second).String()
	}
	switch a.State {
	case Waiting:
		p := a.Presence
		if p == "" {
			p = "no heartbeat"
		}
		return fmt.Sprintf("waiting%s (agent %s)", ago(a.Since), p)
	case Seen:
		return fmt.Sprintf("seen by %s pid %d%s ago, queued", a.Host, a.PID, ago(a.Since))
	case Claimed:
		d := fmt.Sprintf("claimed by %s pid %d (instance %s) since%s ago", a.Host, a.PID, a.Instance, ago(a.Since))
		if a.Job != "" {
			d += fmt.Sprintf("; job %s %s", a.Job, a.JobStatus)
		}
		return d
	case AwaitingInput:
		d := fmt.Sprintf("awaiting input for%s: job %s asked", ago(a.Since), a.Job)
		if a.Note != "" {
			d += " " + strconv.Quote(modelcli.Clip(a.Note, 200))
		}
		if a.Question != "" {
			d += fmt.Sprintf(" (question %s: answer allow, always or deny in reply to it)", a.Question)
		}
		return d
	case Offered:
		return fmt.Sprintf("offered%s ago to the joined session on %s pid %d; not read yet", ago(a.Since), a.Host, a.PID)
	case Read:
		return fmt.Sprintf("read%s ago in the joined session on %s pid %d; not answered yet", ago(a.Since), a.Host, a.PID)
	case Running:
		d := fmt.Sprintf("running job %s on %s pid %d for%s", a.Job, a.Host, a.PID, ago(a.Since))
		if a.JobStatus != jobs.Running {
			d += " (job status " + a.JobStatus + ")"
		}
		return d
	case Answered:
		if a.Reply == "" {
			return "answered without a reply (" + a.Note + ")"
		}
		return fmt.Sprintf("answered by %s after %s", a.Reply, (time.Duration(a.Latency * float64(time.Second))).Round(time.Millisecond))
	case Refused:
		return fmt.Sprintf("refused by %s: %s", a.Guard, a.Error)
	case Failed:
		return "failed: " + a.Error
	case Undeliverable:
		return "undeliverable: " + a.Note
	case Expired:
		return fmt.Sprintf("expired%s ago: %s", ago(a.Since), a.Note)
	}
	return a.State
}
