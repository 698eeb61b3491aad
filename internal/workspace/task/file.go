package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// The statuses of a task.
const (
	Pending = "pending"
	Claimed = "claimed"
	Done    = "done"
	Failed  = "failed"
)

// The kinds of event.
const (
	EvClaimed    = "claimed"
	EvCheckpoint = "checkpoint"
	EvDone       = "done"
	EvFailed     = "failed"
	EvReleased   = "released"
	EvRetried    = "retried" // a failed task back to pending (retry.go)
)

// Limits on what a task and an event may hold.
const (
	MaxTitle   = 200      // bytes
	MaxText    = 64 << 10 // bytes of a body, summary, outcome or error
	MaxDepends = 100
	MaxFiles   = 100  // files of one checkpoint
	MaxFile    = 1024 // bytes of one file name
	maxFile    = 256 << 10
	maxNumber  = 999_999_999
	maxSeq     = 999_999
)

// ErrMalformed is wrapped by every error decoding a task or event file.
var ErrMalformed = errors.New("task: malformed file")

// ErrBadID is wrapped by the error for a string that is not a task id.
var ErrBadID = errors.New("task: not a task id")

// ParseID returns the number of task id "tN" (N from 1, no leading zeros).
func ParseID(id string) (int, error) {
	digits, ok := strings.CutPrefix(id, "t")
	if !ok || digits == "" || len(digits) > 9 || digits[0] == '0' {
		return 0, fmt.Errorf("%w: %q (task ids look like t7)", ErrBadID, id)
	}
	n := 0
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: %q (task ids look like t7)", ErrBadID, id)
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// FormatID returns the id of task number n.
func FormatID(n int) string { return "t" + strconv.Itoa(n) }

// Task is a task and its state.
type Task struct {
	Spec // the task file: set once by Add

	// The state: from the newest event.
	Status   string    `json:"status"`
	Owner    string    `json:"owner,omitempty"`   // while claimed
	Updated  time.Time `json:"updated"`           // the newest event's time, else Created
	Summary  string    `json:"summary,omitempty"` // the latest checkpoint of the current claim
	Outcome  string    `json:"outcome,omitempty"`
	Error    string    `json:"error,omitempty"`
	Events   int       `json:"events"`             // how many events it has
	Ready    bool      `json:"ready"`              // pending, every dependency done
	Blockers []string  `json:"blockers,omitempty"` // dependencies not yet done
	// BlockedBy are the Blockers that failed: the task cannot become
	// ready until they are retried (Board.Retry) and done.
	BlockedBy []string `json:"blocked_by,omitempty"`
	// Attempts counts the claims made on the task, across retries.
	Attempts int `json:"attempts,omitempty"`
	// OutcomeDetail is the done event's structured detail (a JSON object).
	OutcomeDetail Detail `json:"outcome_detail,omitempty"`
	// LastError is the error of the attempt that failed before the
	// newest retry.
	LastError string `json:"last_error,omitempty"`
	// The git worktree and branch of the newest worktree event (collab
	// task claim --worktree), and the host they are on.
	Worktree     string `json:"worktree,omitempty"`
	Branch       string `json:"branch,omitempty"`
	WorktreeHost string `json:"worktree_host,omitempty"`
	// Unverified counts the events that do not verify though they should
	// (see the package doc's Signatures).
	Unverified int `json:"unverified,omitempty"`
}

// Spec is what a task file holds, written once when the task is added.
type Spec struct {
	ID        string    `json:"id"`
	Channel   string    `json:"channel"`
	Title     string    `json:"title"`
	Body      string    `json:"body,omitempty"`
	Depends   []string  `json:"depends,omitempty"`
	CreatedBy string    `json:"created_by"`
	Created   time.Time `json:"created"`
	Host      string    `json:"host,omitempty"`
}

// Event is one event of a task: what happened and the state that follows.
type Event struct {
	Seq     int       `json:"seq"`
	Event   string    `json:"event"`  // EvClaimed, EvCheckpoint, …
	Status  string    `json:"status"` // after the event
	Owner   string    `json:"owner,omitempty"`
	Agent   string    `json:"agent"` // who made the event
	Host    string    `json:"host,omitempty"`
	Time    time.Time `json:"time"`
	Summary string    `json:"summary,omitempty"` // checkpoint
	Outcome string    `json:"outcome,omitempty"` // done
	Error   string    `json:"error,omitempty"`   // failed
	Note    string    `json:"note,omitempty"`    // released, retried: why
	// A checkpoint's type (CheckpointTypes; "" in events written before
	// types, read as progress) and the files it changed.
	Type  string   `json:"type,omitempty"`
	Files []string `json:"files,omitempty"`
	// A worktree event's worktree (absolute path on Host) and branch.
	Worktree string `json:"worktree,omitempty"`
	Branch   string `json:"branch,omitempty"`
	// Detail is a checkpoint's or a done event's structured detail: a
	// JSON object (detail.go).
	Detail Detail `json:"detail,omitempty"`

	Signature *signing.Signature `json:"signature,omitempty"`

	// Set when read (see the package doc's Signatures): the verdict on the
	// signature, and whether the event was left out of the state.
	Verdict signing.Verdict `json:"-"`
	Ignored bool            `json:"-"`
}

// taskName is the file name of task number n.
func taskName(n int) string { return FormatID(n) + ".json" }

// eventName is the file name of event seq.
func eventName(seq int) string { return fmt.Sprintf("%06d.json", seq) }

// parseEventName returns the number of an event file name.
func parseEventName(name string) (int, bool) {
	digits, ok := strings.CutSuffix(name, ".json")
	if !ok || len(digits) != 6 {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || digits[0] == '+' || digits[0] == '-' {
		return 0, false
	}
	return n, true
}

// DecodeTask parses a task file. id is the task the file is named for; an
// id field that disagrees is an error.
func DecodeTask(data []byte, id string) (Task, error) {
	var f Spec
	if err := json.Unmarshal(data, &f); err != nil {
		return Task{}, fmt.Errorf("%w: %s: %v", ErrMalformed, id, err)
	}
	if f.ID == "" {
		f.ID = id
	}
	if f.ID != id {
		return Task{}, fmt.Errorf("%w: %s: the file says id %q", ErrMalformed, id, f.ID)
	}
	if err := checkTask(f); err != nil {
		return Task{}, fmt.Errorf("%w: %s: %v", ErrMalformed, id, err)
	}
	return Task{Spec: f, Status: Pending, Updated: f.Created}, nil
}

func checkTask(f Spec) error {
	if _, err := ParseID(f.ID); err != nil {
		return err
	}
	if err := checkTitle(f.Title); err != nil {
		return err
	}
	if err := checkText("body", f.Body); err != nil {
		return err
	}
	if err := tree.CheckName("agent", f.CreatedBy); err != nil {
		return err
	}
	if len(f.Depends) > MaxDepends {
		return fmt.Errorf("more than %d dependencies", MaxDepends)
	}
	for _, d := range f.Depends {
		if _, err := ParseID(d); err != nil {
			return fmt.Errorf("dependency: %w", err)
		}
		if d == f.ID {
			return fmt.Errorf("depends on itself")
		}
	}
	return nil
}

func checkTitle(s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return errors.New("the title is empty")
	case len(s) > MaxTitle:
		return fmt.Errorf("the title is longer than %d bytes", MaxTitle)
	case strings.ContainsAny(s, "\n\r"):
		return errors.New("the title has a line break")
	case !utf8.ValidString(s):
		return errors.New("the title is not UTF-8")
	}
	return nil
}

func checkText(what, s string) error {
	if len(s) > MaxText {
		return fmt.Errorf("the %s is longer than %d bytes", what, MaxText)
	}
	return nil
}

// DecodeEvent parses an event file. seq is the number in its name; a seq
// field that disagrees is an error.
func DecodeEvent(data []byte, seq int) (Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return Event{}, fmt.Errorf("%w: event %d: %v", ErrMalformed, seq, err)
	}
	if err := checkEvent(e, seq); err != nil {
		return Event{}, fmt.Errorf("%w: event %d: %v", ErrMalformed, seq, err)
	}
	return e, nil
}

func checkEvent(e Event, seq int) error {
	if e.Seq != seq {
		return fmt.Errorf("the file says seq %d", e.Seq)
	}
	if err := tree.CheckName("agent", e.Agent); err != nil {
		return err
	}
	want := map[string]string{
		EvClaimed: Claimed, EvCheckpoint: Claimed, EvDone: Done, EvFailed: Failed, EvReleased: Pending,
		EvWorktree: Claimed, EvRetried: Pending,
	}[e.Event]
	if want == "" {
		return fmt.Errorf("unknown event %q", e.Event)
	}
	if e.Status != want {
		return fmt.Errorf("event %s with status %q", e.Event, e.Status)
	}
	if e.Status == Claimed {
		if err := tree.CheckName("owner", e.Owner); err != nil {
			return err
		}
	} else if e.Owner != "" {
		return fmt.Errorf("status %s with an owner", e.Status)
	}
	if err := checkCheckpoint(e); err != nil {
		return err
	}
	if err := checkWorktree(e); err != nil {
		return err
	}
	if err := checkEventDetail(e); err != nil {
		return err
	}
	for _, t := range []struct{ what, s string }{{"summary", e.Summary}, {"outcome", e.Outcome}, {"error", e.Error}, {"note", e.Note}} {
		if err := checkText(t.what, t.s); err != nil {
			return err
		}
	}
	return nil
}

// apply returns t after event e.
func apply(t Task, e Event) Task {
	t.Status, t.Owner, t.Updated = e.Status, e.Owner, e.Time
	t.Events = max(t.Events, e.Seq)
	switch e.Event {
	case EvClaimed:
		t.Summary = ""
		t.Attempts++
	case EvReleased:
		t.Summary = ""
	case EvRetried:
		t.Summary, t.LastError, t.Error = "", t.Error, ""
	case EvCheckpoint:
		t.Summary = e.Summary
	case EvDone:
		t.Outcome, t.OutcomeDetail = e.Outcome, e.Detail
	case EvFailed:
		t.Error = e.Error
	case EvWorktree:
		t.Worktree, t.Branch, t.WorktreeHost = e.Worktree, e.Branch, e.Host
	}
	return t
}
