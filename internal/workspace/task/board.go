package task

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// DefaultGrace is how long a claim's owner may show no sign of life before
// the claim is released. It exceeds presence.DefaultStaleAfter, so an
// owner whose watcher is merely slow to beat keeps its claim.
const DefaultGrace = 5 * time.Minute

// maxTries bounds how often a transition is tried again after losing a
// race to another writer.
const maxTries = 50

var (
	// ErrNotFound: no such task in the channel.
	ErrNotFound = errors.New("task: no such task")
	// ErrInvalid is wrapped by Add's error for a task that breaks the
	// rules: an empty title, a bad agent name or dependency id, and so on.
	ErrInvalid = errors.New("task: invalid task")
	// ErrNotReady: the task waits for dependencies that are not done.
	ErrNotReady = errors.New("task: dependencies not done")
	// ErrClosed: the task is done or failed.
	ErrClosed = errors.New("task: already finished")
	// ErrNotOwner: the task is not claimed by the agent that tries to
	// report on it.
	ErrNotOwner = errors.New("task: not claimed by this agent")
	// ErrNoneReady: Next found no ready task.
	ErrNoneReady = errors.New("task: no ready task")
	// ErrContended: other writers kept winning; try again.
	ErrContended = errors.New("task: too much contention, try again")
)

// ClaimedError is returned when a task is claimed by another agent.
type ClaimedError struct {
	Task, Owner string
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("task %s is claimed by %s", e.Task, e.Owner)
}

// Board is the task board of one channel. Its zero-valued fields but Root
// and Channel take defaults. A Board is safe for concurrent use.
type Board struct {
	Root    tree.Root
	Channel string

	Now        func() time.Time   // default time.Now
	Grace      time.Duration      // default DefaultGrace
	StaleAfter time.Duration      // presence staleness; default presence.DefaultStaleAfter
	Host       string             // this host, written in events and used for PID checks; default os.Hostname
	Alive      func(pid int) bool // default proc.PIDAlive

	// Signer signs the events this board makes for its agent (nil: none;
	// events of other agents, such as a sweep's, are unsigned). Verifier
	// and Trust judge the events read (see the package doc).
	Signer   *signing.Signer
	Verifier *signing.Verifier
	Trust    signing.Policy // default signing.Known
}

// New returns the board of channel in root.
func New(root tree.Root, channel string) (*Board, error) {
	if err := tree.CheckName("channel", channel); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	return &Board{Root: root, Channel: channel, Host: host}, nil
}

func (b *Board) now() time.Time {
	if b.Now != nil {
		return b.Now().UTC()
	}
	return time.Now().UTC()
}

func (b *Board) grace() time.Duration { return cmp.Or(b.Grace, DefaultGrace) }

func (b *Board) alive() func(int) bool {
	if b.Alive != nil {
		return b.Alive
	}
	return proc.PIDAlive
}

func (b *Board) dir(create bool) (*safedir.Dir, error) {
	if err := tree.CheckName("channel", b.Channel); err != nil {
		return nil, err
	}
	if create {
		return safedir.Create(b.Root.Tasks(b.Channel))
	}
	return safedir.Open(b.Root.Tasks(b.Channel))
}

// NewTask is what Add needs to know.
type NewTask struct {
	Title   string
	Body    string
	Depends []string // ids of tasks of the same channel
	By      string   // the agent adding it
}

// Add adds a task and returns it, pending.
func (b *Board) Add(nt NewTask) (Task, error) {
	f := Spec{
		// The id is checked now, numbered below.
		ID: FormatID(maxNumber), Channel: b.Channel, Title: nt.Title, Body: nt.Body,
		Depends:   slices.Compact(slices.Sorted(slices.Values(nt.Depends))),
		CreatedBy: nt.By, Created: b.now(), Host: b.Host,
	}
	if len(f.Depends) == 0 {
		f.Depends = nil
	}
	if err := checkTask(f); err != nil {
		return Task{}, fmt.Errorf("add task: %w", invalidError{err})
	}
	d, err := b.dir(true)
	if err != nil {
		return Task{}, fmt.Errorf("add task: %w", err)
	}
	defer d.Close()
	for _, dep := range f.Depends {
		if _, err := readTask(d, dep); err != nil {
			return Task{}, fmt.Errorf("add task: dependency %s: %w", dep, err)
		}
	}
	nums, err := numbers(d)
	if err != nil {
		return Task{}, fmt.Errorf("add task: %w", err)
	}
	n := 1
	if len(nums) > 0 {
		n = nums[len(nums)-1] + 1
	}
	for ; n <= maxNumber; n++ {
		f.ID = FormatID(n)
		data, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			return Task{}, err
		}
		err = d.Publish(taskName(n), append(data, '\n'), 0o666)
		if err == nil {
			return DecodeTask(data, f.ID)
		}
		if !errors.Is(err, fs.ErrExist) {
			return Task{}, fmt.Errorf("add task: %w", err)
		}
	}
	return Task{}, fmt.Errorf("add task: no free task number")
}

// numbers lists the numbers of the channel's task files, sorted.
func numbers(d *safedir.Dir) ([]int, error) {
	entries, err := d.ReadDir()
	if err != nil {
		return nil, err
	}
	var nums []int
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if n, err := ParseID(id); err == nil {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	return nums, nil
}

// readTask reads the task file of id, without its events.
func readTask(d *safedir.Dir, id string) (Task, error) {
	n, err := ParseID(id)
	if err != nil {
		return Task{}, err
	}
	data, _, err := d.ReadFile(taskName(n), maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return Task{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Task{}, err
	}
	return DecodeTask(data, id)
}

// history reads the events of task id, oldest first, and the number the
// next event must have. Malformed events are left out but their numbers are
// taken. atLeast is a number known to exist (a publish found it taken):
// history looks for it by name until it can read it.
func history(d *safedir.Dir, id string, atLeast int) ([]Event, int, error) {
	ed, err := safedir.Open(d.Path() + "/" + id)
	if errors.Is(err, fs.ErrNotExist) {
		if atLeast > 0 {
			return nil, 0, errNotVisible
		}
		return nil, 1, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer ed.Close()
	entries, err := ed.ReadDir()
	if err != nil {
		return nil, 0, err
	}
	var evs []Event
	top := 0
	read := func(seq int) (bool, error) {
		data, _, err := ed.ReadFile(eventName(seq), maxFile)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		top = max(top, seq)
		if e, err := DecodeEvent(data, seq); err == nil {
			evs = append(evs, e)
		}
		return true, nil
	}
	for _, e := range entries {
		if seq, ok := parseEventName(e.Name()); ok {
			if _, err := read(seq); err != nil {
				return nil, 0, err
			}
		}
	}
	// A listing can lag: look for newer events by name.
	for top < maxSeq {
		ok, err := read(top + 1)
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			break
		}
	}
	if top < atLeast {
		return nil, 0, errNotVisible
	}
	slices.SortFunc(evs, func(a, b Event) int { return a.Seq - b.Seq })
	return evs, top + 1, nil
}

// errForgedPresence: a heartbeat that does not verify as its agent's.
var errForgedPresence = errors.New("task: forged presence")

// errNotVisible: an event known to exist cannot be read here yet.
var errNotVisible = errors.New("task: an event is not visible yet")

// load reads task id with its state.
func (b *Board) load(d *safedir.Dir, id string, atLeast int) (Task, []Event, int, error) {
	t, err := readTask(d, id)
	if err != nil {
		return Task{}, nil, 0, err
	}
	evs, next, err := history(d, id, atLeast)
	if err != nil {
		return Task{}, nil, 0, fmt.Errorf("task %s: %w", id, err)
	}
	for i := range evs {
		e := &evs[i]
		e.Verdict = e.Verify(b.Verifier, b.Channel, id)
		if e.Verdict != signing.Verified && (e.Verdict != signing.Unsigned || b.Verifier.HasKeys(e.Agent)) {
			t.Unverified++
		}
		if !b.Verifier.Accepts(b.Trust, e.Agent, e.Verdict) {
			e.Ignored = true
			continue
		}
		t = apply(t, *e)
	}
	t.Events = next - 1
	return t, evs, next, nil
}

// readiness fills in t.Ready, t.Blockers and t.BlockedBy from the statuses of the
// other tasks (status of id, "" if unknown).
func readiness(t *Task, status func(id string) string) {
	t.Blockers, t.BlockedBy = nil, nil
	for _, dep := range t.Depends {
		switch status(dep) {
		case Done:
			continue
		case Failed:
			t.BlockedBy = append(t.BlockedBy, dep)
		}
		t.Blockers = append(t.Blockers, dep)
	}
	t.Ready = t.Status == Pending && len(t.Blockers) == 0
}

// Get returns task id with its state.
func (b *Board) Get(id string) (Task, error) {
	t, _, err := b.getWithEvents(id)
	return t, err
}

// Events returns task id and its events, oldest first.
func (b *Board) Events(id string) (Task, []Event, error) {
	return b.getWithEvents(id)
}

func (b *Board) getWithEvents(id string) (Task, []Event, error) {
	if _, err := ParseID(id); err != nil {
		return Task{}, nil, err
	}
	d, err := b.dir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return Task{}, nil, fmt.Errorf("%w: %s in channel %s", ErrNotFound, id, b.Channel)
	}
	if err != nil {
		return Task{}, nil, err
	}
	defer d.Close()
	t, evs, _, err := b.load(d, id, 0)
	if err != nil {
		return Task{}, nil, err
	}
	b.fillReadiness(d, &t)
	return t, evs, nil
}

func (b *Board) fillReadiness(d *safedir.Dir, t *Task) {
	readiness(t, func(dep string) string {
		dt, _, _, err := b.load(d, dep, 0)
		if err != nil {
			return ""
		}
		return dt.Status
	})
}

// List returns every task of the channel in id order, after releasing
// stale claims (see Sweep). Tasks whose files cannot be read are left out
// and reported in the error list bad.
func (b *Board) List() (tasks []Task, bad []error, err error) {
	if _, err := b.Sweep(); err != nil {
		return nil, nil, err
	}
	return b.list()
}

func (b *Board) list() ([]Task, []error, error) {
	d, err := b.dir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	nums, err := numbers(d)
	if err != nil {
		return nil, nil, fmt.Errorf("list tasks: %w", err)
	}
	var tasks []Task
	var bad []error
	for _, n := range nums {
		t, _, _, err := b.load(d, FormatID(n), 0)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		tasks = append(tasks, t)
	}
	status := make(map[string]string, len(tasks))
	for _, t := range tasks {
		status[t.ID] = t.Status
	}
	for i := range tasks {
		readiness(&tasks[i], func(id string) string { return status[id] })
	}
	return tasks, bad, nil
}

// transition makes one event on task id: decide sees the current state
// and returns the event to publish (Seq, Time and Host are filled in), an
// empty event for no change, or an error. When another writer publishes
// first, decide runs again on the new state.
func (b *Board) transition(id string, decide func(t Task) (Event, error)) (Task, error) {
	if _, err := ParseID(id); err != nil {
		return Task{}, err
	}
	d, err := b.dir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return Task{}, fmt.Errorf("%w: %s in channel %s", ErrNotFound, id, b.Channel)
	}
	if err != nil {
		return Task{}, err
	}
	defer d.Close()
	atLeast := 0
	for try := 0; try < maxTries; try++ {
		if try > 3 {
			time.Sleep(time.Duration(min(try, 20)) * 5 * time.Millisecond)
		}
		t, _, next, err := b.load(d, id, atLeast)
		if errors.Is(err, errNotVisible) {
			continue
		}
		if err != nil {
			return Task{}, err
		}
		b.fillReadiness(d, &t)
		e, err := decide(t)
		if err != nil || e.Event == "" {
			return t, err
		}
		if next > maxSeq {
			return t, fmt.Errorf("task %s: more than %d events", id, maxSeq)
		}
		if e.Signature == nil { // one signed elsewhere keeps what it was signed over (ApplySigned)
			e.Seq, e.Time, e.Host = next, b.now(), b.Host
		}
		if err := checkEvent(e, next); err != nil {
			return t, fmt.Errorf("task %s: %w", id, err)
		}
		if b.Signer != nil && b.Signer.Agent() == e.Agent && e.Signature == nil {
			e.Signature = b.Signer.Sign(e.Payload(b.Channel, id))
		}
		data, err := json.MarshalIndent(e, "", "  ")
		if err != nil {
			return t, err
		}
		ed, err := safedir.Create(d.Path() + "/" + id)
		if err != nil {
			return t, fmt.Errorf("task %s: %w", id, err)
		}
		err = ed.Publish(eventName(next), append(data, '\n'), 0o666)
		ed.Close()
		if err == nil {
			t = apply(t, e)
			b.fillReadiness(d, &t)
			return t, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return t, fmt.Errorf("task %s: %w", id, err)
		}
		atLeast = next // someone else made event next: read it, decide again
	}
	return Task{}, fmt.Errorf("%w (task %s)", ErrContended, id)
}

// Claim claims task id for agent. It succeeds if the task is ready, or
// already claimed by agent; a task claimed by another live agent gives a
// *ClaimedError. A claim whose owner is gone is released first (an event
// of its own).
func (b *Board) Claim(id, agent string) (Task, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return Task{}, err
	}
	for range maxTries {
		released := false
		t, err := b.transition(id, func(t Task) (Event, error) {
			if t.Status == Claimed && t.Owner != agent {
				if gone, why := b.ownerGone(t); gone {
					released = true
					return b.release(t, agent, why), nil
				}
			}
			return decide(id, t, Event{Event: EvClaimed, Status: Claimed, Owner: agent, Agent: agent})
		})
		if err != nil || !released {
			return t, err
		}
	}
	return Task{}, fmt.Errorf("%w (task %s)", ErrContended, id)
}

func (b *Board) release(t Task, by, why string) Event {
	return Event{Event: EvReleased, Status: Pending, Agent: by,
		Note: fmt.Sprintf("claim of %s released: %s", t.Owner, why)}
}

// byOwner makes the event e on task id if agent owns it.
func (b *Board) byOwner(id, agent string, e Event) (Task, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return Task{}, err
	}
	e.Agent = agent
	if e.Status == Claimed {
		e.Owner = agent
	}
	return b.transition(id, func(t Task) (Event, error) { return decide(id, t, e) })
}

// decide is the board's rule for an agent's own event e on task id, whose
// state is t: a claim (e.Event EvClaimed) takes a ready pending task and
// is no event (Event{}) when the agent already owns it; a retry takes a
// failed task, whoever makes it; a checkpoint, done or failed needs the
// task claimed by e.Agent. It returns the event to write or why not
// (ErrNotReady, *ClaimedError, ErrClosed, ErrNotOwner, ErrNotFailed). Releasing a gone owner's claim is the caller's, before.
// Claim, byOwner and ApplySigned all decide with it.
func decide(id string, t Task, e Event) (Event, error) {
	switch {
	case e.Event == EvRetried && t.Status != Failed:
		return Event{}, fmt.Errorf("%w: task %s is %s", ErrNotFailed, id, t.Status)
	case e.Event == EvRetried:
		return e, nil
	case e.Event == EvClaimed && t.Status == Pending && len(t.BlockedBy) > 0:
		return Event{}, fmt.Errorf("%w: task %s is blocked by failed %s (retry it first)", ErrNotReady, id, strings.Join(t.BlockedBy, ", "))
	case e.Event == EvClaimed && t.Status == Pending && !t.Ready:
		return Event{}, fmt.Errorf("%w: task %s waits for %s", ErrNotReady, id, strings.Join(t.Blockers, ", "))
	case e.Event == EvClaimed && t.Status == Pending:
		return e, nil
	case e.Event == EvClaimed && t.Status == Claimed && t.Owner == e.Agent:
		return Event{}, nil
	case e.Event == EvClaimed && t.Status == Claimed:
		return Event{}, &ClaimedError{Task: id, Owner: t.Owner}
	case t.Status == Done || t.Status == Failed:
		return Event{}, fmt.Errorf("%w: task %s is %s", ErrClosed, id, t.Status)
	case t.Status != Claimed:
		return Event{}, fmt.Errorf("%w: task %s is %s; claim it first", ErrNotOwner, id, t.Status)
	case t.Owner != e.Agent:
		return Event{}, fmt.Errorf("%w: task %s is claimed by %s", ErrNotOwner, id, t.Owner)
	}
	return e, nil
}

// Checkpoint records progress on a task agent has claimed. It also counts
// as the owner's sign of life.
func (b *Board) Checkpoint(id, agent, summary string) (Task, error) {
	return b.own(id, agent, EvCheckpoint, summary, Checkpoint{})
}

// Finish marks a task agent has claimed done, with an outcome.
func (b *Board) Finish(id, agent, outcome string) (Task, error) {
	return b.own(id, agent, EvDone, outcome, Checkpoint{})
}

// FinishDetail is Finish with the outcome's structured detail (a JSON
// object, see ParseDetail; nil: none).
func (b *Board) FinishDetail(id, agent, outcome string, detail Detail) (Task, error) {
	return b.own(id, agent, EvDone, outcome, Checkpoint{Detail: detail})
}

// Fail marks a task agent has claimed failed, with an error.
func (b *Board) Fail(id, agent, errText string) (Task, error) {
	return b.own(id, agent, EvFailed, errText, Checkpoint{})
}

// own writes agent's own event kind (OwnEvent's, the one a remote agent
// signs) on task id, as the board's rules decide.
func (b *Board) own(id, agent, kind, text string, c Checkpoint) (Task, error) {
	e, err := OwnEvent(kind, agent, text, c)
	if err != nil {
		return Task{}, err
	}
	return b.byOwner(id, agent, e)
}

// Next claims for agent the first ready task, in id order, and returns it;
// ErrNoneReady when there is none.
func (b *Board) Next(agent string) (Task, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return Task{}, err
	}
	if _, err := b.Sweep(); err != nil {
		return Task{}, err
	}
	tasks, _, err := b.list()
	if err != nil {
		return Task{}, err
	}
	for _, t := range tasks {
		if !t.Ready {
			continue
		}
		got, err := b.Claim(t.ID, agent)
		var ce *ClaimedError
		switch {
		case err == nil:
			return got, nil
		case errors.As(err, &ce), errors.Is(err, ErrNotReady), errors.Is(err, ErrClosed):
			continue // taken meanwhile
		default:
			return Task{}, err
		}
	}
	return Task{}, fmt.Errorf("%w in channel %s", ErrNoneReady, b.Channel)
}

// Sweep releases every claim whose owner is gone and returns the release
// events it made. Of several hosts sweeping at once, one releases each
// claim.
func (b *Board) Sweep() ([]Event, error) {
	tasks, _, err := b.list()
	if err != nil {
		return nil, err
	}
	var out []Event
	for _, t := range tasks {
		if t.Status != Claimed {
			continue
		}
		if gone, _ := b.ownerGone(t); !gone {
			continue
		}
		var made Event
		_, err := b.transition(t.ID, func(cur Task) (Event, error) {
			if cur.Status != Claimed || cur.Owner != t.Owner {
				return Event{}, nil
			}
			gone, why := b.ownerGone(cur)
			if !gone {
				return Event{}, nil
			}
			made = b.release(cur, cmp.Or(sweeper(), cur.Owner), why)
			return made, nil
		})
		if err != nil {
			return out, err
		}
		if made.Event != "" {
			out = append(out, made)
		}
	}
	return out, nil
}

// sweeper names the agent recorded as releasing a claim during a sweep:
// nobody in particular.
func sweeper() string { return "collab" }

// ownerGone reports whether the owner of claimed task t has shown no sign
// of life for the grace period, and why.
func (b *Board) ownerGone(t Task) (bool, string) {
	now := b.now()
	last := t.Updated
	state := "no presence heartbeat"
	st, err := presence.Read(b.Root, t.Owner)
	if err == nil && !b.Verifier.Accepts(b.Trust, t.Owner, st.Verify(b.Verifier, t.Owner)) {
		err, state = errForgedPresence, "a forged presence heartbeat" // no sign of life
	}
	if err == nil {
		eff := st.Effective(now, b.StaleAfter, b.Host, b.alive())
		if strings.HasPrefix(eff, presence.StateAwake) {
			return false, ""
		}
		state = "presence " + eff
		if pt, ok := st.Time(); ok && pt.After(last) {
			last = pt
		}
	}
	silent := now.Sub(last)
	if silent <= b.grace() {
		return false, ""
	}
	return true, fmt.Sprintf("%s, no sign of life for %s (grace %s)", state, silent.Round(time.Second), b.grace())
}

// invalidError is a rule a new task breaks; it is ErrInvalid.
type invalidError struct{ err error }

func (e invalidError) Error() string   { return e.err.Error() }
func (e invalidError) Unwrap() []error { return []error{ErrInvalid, e.err} }
