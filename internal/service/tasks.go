package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/task"
)

// Tasks is the operations on a channel's task board (package task); the
// Workspace holds them. Events are made as the actor and signed with its
// key; a claim another agent holds is Conflict wrapping a
// *task.ClaimedError, the board's other refusals (not ready, finished,
// not the owner) Conflict too, no ready task for a next claim NotFound.
type Tasks interface {
	// Tasks lists the board (stale claims released first), in id order.
	Tasks(ctx context.Context, q TaskQuery) (TaskList, error)
	// Task returns a task and its events.
	Task(ctx context.Context, q TaskQuery, id string) (TaskShown, error)
	// TaskContext is what an agent needs to resume task id, cut to about
	// maxTokens (0: task.DefaultMaxTokens).
	TaskContext(ctx context.Context, q TaskQuery, id string, maxTokens int) (task.Context, error)
	// AddTask adds a task created by the actor.
	AddTask(ctx context.Context, a Actor, q TaskQuery, nt NewTask) (task.Task, error)
	// ClaimTask claims task id for the actor; id "" claims the first
	// ready task.
	ClaimTask(ctx context.Context, a Actor, q TaskQuery, id string) (task.Task, error)
	// ReportTask records the actor's checkpoint, outcome or failure on
	// the task it holds, or its retry of a failed task (anyone may; a task
	// not failed is Conflict wrapping task.ErrNotFailed).
	ReportTask(ctx context.Context, a Actor, q TaskQuery, id string, r TaskReport) (task.Task, error)
	// RecordTaskWorktree records on the actor's task the git worktree
	// and branch it works in, on TaskHost.
	RecordTaskWorktree(ctx context.Context, a Actor, q TaskQuery, id, path, branch string) (task.Task, error)
	// TaskHost is the host name the actor's events carry: where the
	// worktrees it records are.
	TaskHost() string
}

// TaskQuery names a board.
type TaskQuery struct {
	Channel string
	// Status keeps only the tasks in these states: pending, ready,
	// claimed, done, failed (Tasks); another word is Invalid.
	Status []string
	// Grace releases a claim whose agent shows no sign of life for this
	// long (0: task.DefaultGrace); on the mount.
	Grace time.Duration
}

// TaskList is a board as Tasks lists it.
type TaskList struct {
	Tasks []task.Task
	// Skipped are the tasks that could not be read, one line each.
	Skipped []string
	// More: the list was cut to what a bridge reply holds.
	More bool
}

// TaskShown is a task with its events (each with its verdict).
type TaskShown struct {
	Task   task.Task
	Events []task.Event
	// More: older events were left out of what a bridge reply holds.
	More bool
}

// NewTask is a task to add.
type NewTask struct {
	Title, Body string
	Depends     []string
}

// TaskReport is an agent's report on its task.
type TaskReport struct {
	// Kind is task.EvCheckpoint, task.EvDone, task.EvFailed or
	// task.EvRetried.
	Kind string
	// Text is the checkpoint's summary, the outcome, the error or the
	// retry's note.
	Text string
	// Checkpoint is a checkpoint's type and files (its Text is Text), and
	// the structured detail of a checkpoint or an outcome (task.ParseDetail).
	Checkpoint task.Checkpoint
}

// TaskStatuses are the states a TaskQuery's Status may name: blocked is
// a pending task whose dependency failed.
var TaskStatuses = []string{task.Pending, "ready", "blocked", task.Claimed, task.Done, task.Failed}

// statusFilter is the filter of q.Status: the one rule for every door.
func statusFilter(status []string) (func(task.Task) bool, error) {
	want := map[string]bool{}
	for _, s := range status {
		s = strings.ToLower(strings.TrimSpace(s))
		if !slices.Contains(TaskStatuses, s) {
			return nil, errkind.New(errkind.Invalid, "status %q is not one of %s", s, strings.Join(TaskStatuses, ", "))
		}
		want[s] = true
	}
	return func(t task.Task) bool {
		return len(want) == 0 || want[t.Status] || want["ready"] && t.Ready || want["blocked"] && t.Status == task.Pending && len(t.BlockedBy) > 0
	}, nil
}

// keep applies q.Status to tasks.
func (q TaskQuery) keep(tasks []task.Task) ([]task.Task, error) {
	ok, err := statusFilter(q.Status)
	if err != nil {
		return nil, err
	}
	tasks = slices.DeleteFunc(tasks, func(t task.Task) bool { return !ok(t) })
	if tasks == nil {
		tasks = []task.Task{}
	}
	return tasks, nil
}

// checkTaskID checks a task id a request names.
func checkTaskID(id string) error {
	if _, err := task.ParseID(id); err != nil {
		return errkind.Wrap(errkind.Invalid, err)
	}
	return nil
}

// TaskError classifies an error of package task, once for every door.
func TaskError(err error) error {
	var ce *task.ClaimedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return errkind.Wrap(errkind.Conflict, claimedError{ce})
	case errors.Is(err, task.ErrNotReady), errors.Is(err, task.ErrClosed),
		errors.Is(err, task.ErrNotOwner), errors.Is(err, task.ErrStale), errors.Is(err, task.ErrNotFailed):
		return errkind.Wrap(errkind.Conflict, err)
	case errors.Is(err, task.ErrInvalid), errors.Is(err, task.ErrBadID), errors.Is(err, tree.ErrBadName):
		return errkind.Wrap(errkind.Invalid, err)
	case errors.Is(err, task.ErrNotFound), errors.Is(err, task.ErrNoneReady):
		return errkind.Wrap(errkind.NotFound, err)
	case errors.Is(err, task.ErrForged):
		return errkind.Wrap(errkind.Forbidden, err)
	case errors.Is(err, task.ErrContended):
		return errkind.Wrap(errkind.Unavailable, err)
	}
	return errkind.Wrap(errkind.Of(err), err)
}

// claimedError is a claim another agent holds, naming it as people do
// (NAME@INSTANCE); errors.As finds the *task.ClaimedError.
type claimedError struct{ e *task.ClaimedError }

func (c claimedError) Error() string {
	return fmt.Sprintf("task %s is claimed by %s", c.e.Task, workflow.Address(c.e.Owner))
}
func (c claimedError) Unwrap() error { return c.e }

// board opens q's board, acting as a (a.Name "": reading only); the
// events of an agent with keys must be signed.
func (m *Mount) board(a Actor, q TaskQuery) (*task.Board, string, error) {
	return m.boardAs(a, q, true)
}

// boardAs is board; signs false for what is not signed (a task file).
func (m *Mount) boardAs(a Actor, q TaskQuery, signs bool) (*task.Board, string, error) {
	b, err := task.New(m.cfg.Root, q.Channel)
	if err != nil {
		return nil, "", errkind.Wrap(errkind.Invalid, err)
	}
	b.Host, b.Now, b.Verifier, b.Grace = m.cfg.Host, m.cfg.Now, m.cfg.Verifier, q.Grace
	if a.Name == "" {
		return b, "", nil
	}
	id, err := parseAgent("agent", a.Name)
	if err != nil {
		return nil, "", err
	}
	if signs && a.Signer == nil && m.cfg.Verifier.HasKeys(id) {
		return nil, "", errkind.New(errkind.Forbidden, "%s has keys in the keyring, so its unsigned events would count for nothing; pass --key (or COLLAB_KEY)", id)
	}
	b.Signer = a.Signer
	return b, id, nil
}

// Tasks implements Workspace.
func (m *Mount) Tasks(_ context.Context, q TaskQuery) (TaskList, error) {
	if _, err := statusFilter(q.Status); err != nil {
		return TaskList{}, err
	}
	b, _, err := m.board(Actor{}, q)
	if err != nil {
		return TaskList{}, err
	}
	tasks, bad, err := b.List()
	if err != nil {
		return TaskList{}, TaskError(err)
	}
	out := TaskList{}
	for _, e := range bad {
		out.Skipped = append(out.Skipped, e.Error())
	}
	out.Tasks, err = q.keep(tasks)
	return out, err
}

// Task implements Workspace.
func (m *Mount) Task(_ context.Context, q TaskQuery, id string) (TaskShown, error) {
	if err := checkTaskID(id); err != nil {
		return TaskShown{}, err
	}
	b, _, err := m.board(Actor{}, q)
	if err != nil {
		return TaskShown{}, err
	}
	t, evs, err := b.Events(id)
	return TaskShown{Task: t, Events: evs}, TaskError(err)
}

// TaskContext implements Workspace.
func (m *Mount) TaskContext(_ context.Context, q TaskQuery, id string, maxTokens int) (task.Context, error) {
	if maxTokens < 0 {
		return task.Context{}, errkind.New(errkind.Invalid, "max_tokens %d is negative", maxTokens)
	}
	if err := checkTaskID(id); err != nil {
		return task.Context{}, err
	}
	b, _, err := m.board(Actor{}, q)
	if err != nil {
		return task.Context{}, err
	}
	c, err := b.Context(id, maxTokens)
	return c, TaskError(err)
}

// AddTask implements Workspace.
func (m *Mount) AddTask(_ context.Context, a Actor, q TaskQuery, nt NewTask) (task.Task, error) {
	for _, d := range nt.Depends {
		if err := checkTaskID(d); err != nil {
			return task.Task{}, errkind.Wrap(errkind.Invalid, fmt.Errorf("depends: %w", err))
		}
	}
	b, by, err := m.boardAs(a, q, false)
	if err != nil {
		return task.Task{}, err
	}
	t, err := b.Add(task.NewTask{Title: nt.Title, Body: nt.Body, Depends: nt.Depends, By: by})
	return t, TaskError(err)
}

// ClaimTask implements Workspace.
func (m *Mount) ClaimTask(_ context.Context, a Actor, q TaskQuery, id string) (task.Task, error) {
	if id != "" {
		if err := checkTaskID(id); err != nil {
			return task.Task{}, err
		}
	}
	b, by, err := m.board(a, q)
	if err != nil {
		return task.Task{}, err
	}
	if id != "" {
		t, err := b.Claim(id, by)
		return t, TaskError(err)
	}
	t, err := b.Next(by)
	if errors.Is(err, task.ErrNoneReady) {
		return task.Task{}, errkind.Wrap(errkind.NotFound, fmt.Errorf("no ready task in channel %s: %w", q.Channel, err))
	}
	return t, TaskError(err)
}

// ReportTask implements Workspace.
func (m *Mount) ReportTask(_ context.Context, a Actor, q TaskQuery, id string, r TaskReport) (task.Task, error) {
	if err := checkTaskID(id); err != nil {
		return task.Task{}, err
	}
	b, by, err := m.board(a, q)
	if err != nil {
		return task.Task{}, err
	}
	var t task.Task
	switch r.Kind {
	case task.EvCheckpoint:
		ck := r.Checkpoint
		ck.Text = r.Text
		t, err = b.Record(id, by, ck)
	case task.EvDone:
		t, err = b.FinishDetail(id, by, r.Text, r.Checkpoint.Detail)
	case task.EvFailed:
		t, err = b.Fail(id, by, r.Text)
	case task.EvRetried:
		t, err = b.Retry(id, by, r.Text)
	default:
		return task.Task{}, errkind.New(errkind.Invalid, "unknown task report %q", tree.Printable(r.Kind))
	}
	return t, TaskError(err)
}

// RecordTaskWorktree implements Workspace.
func (m *Mount) RecordTaskWorktree(_ context.Context, a Actor, q TaskQuery, id, path, branch string) (task.Task, error) {
	if err := checkTaskID(id); err != nil {
		return task.Task{}, err
	}
	b, by, err := m.board(a, q)
	if err != nil {
		return task.Task{}, err
	}
	t, err := b.RecordWorktree(id, by, path, branch)
	return t, TaskError(err)
}

// TaskHost implements Workspace.
func (m *Mount) TaskHost() string { return m.cfg.Host }

// PrepareTask returns task id ready for a signed event made elsewhere
// (a stale claim released first): its next event is number Events+1.
// The bridge's door, for remote agents.
func (m *Mount) PrepareTask(_ context.Context, q TaskQuery, id string) (task.Task, error) {
	if err := checkTaskID(id); err != nil {
		return task.Task{}, err
	}
	b, _, err := m.board(Actor{}, q)
	if err != nil {
		return task.Task{}, err
	}
	t, err := b.Prepare(id)
	return t, TaskError(err)
}

// ApplyTaskEvent publishes e, an event the actor made and signed
// elsewhere (the bridge's door has checked that it names the actor): its
// signature is verified against the keyring, and the board's rules must
// make exactly that event of the task's state.
func (m *Mount) ApplyTaskEvent(_ context.Context, a Actor, q TaskQuery, id string, e task.Event) (task.Task, error) {
	if err := checkTaskID(id); err != nil {
		return task.Task{}, err
	}
	if e.Agent != a.Name {
		return task.Task{}, errkind.New(errkind.Forbidden, "the event is %q's, not %q's", tree.Printable(e.Agent), a.Name)
	}
	b, _, err := m.board(Actor{}, q)
	if err != nil {
		return task.Task{}, err
	}
	t, err := b.ApplySigned(id, e)
	return t, TaskError(err)
}

// FilterTasks applies q.Status to tasks (a bridged board's list).
func FilterTasks(q TaskQuery, tasks []task.Task) ([]task.Task, error) { return q.keep(tasks) }
