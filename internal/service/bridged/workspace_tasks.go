package bridged

import (
	"context"
	"errors"
	"fmt"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/internal/workspace/task"
)

// The task board through the bridge's task op: list, show, context and
// add are asked; the agent's events are made and signed here with the
// client's key, and the bridge verifies them (package remote).

// ask performs one task request on q's channel.
func (s *Service) ask(ctx context.Context, q service.TaskQuery, req bridge.TaskRequest) (bridge.TaskReply, error) {
	req.Channel = q.Channel
	r, err := s.c.Task(ctx, req)
	if errors.Is(err, remote.ErrUnreachable) {
		err = fmt.Errorf("%w; nothing was written", err)
	}
	return r, taskKind(err)
}

// taskKind classifies an error of a task request or event.
func taskKind(err error) error {
	if err == nil {
		return nil
	}
	var re *remote.RefusedError
	if errors.As(err, &re) {
		return errkind.Wrap(errkind.Conflict, refusal{err, refusals[re.Refusal]})
	}
	if k, ok := errkind.Carried(err); ok {
		return errkind.Wrap(k, err)
	}
	if e := service.TaskError(err); errkind.Of(e) != errkind.Failed {
		return e
	}
	return kindOf(err)
}

// Tasks implements service.Workspace.
func (s *Service) Tasks(ctx context.Context, q service.TaskQuery) (service.TaskList, error) {
	if _, err := service.FilterTasks(q, nil); err != nil {
		return service.TaskList{}, err
	}
	r, err := s.ask(ctx, q, bridge.TaskRequest{Action: "list"})
	if err != nil {
		return service.TaskList{}, err
	}
	out := service.TaskList{More: r.More}
	out.Tasks, err = service.FilterTasks(q, r.Tasks)
	return out, err
}

// Task implements service.Workspace.
func (s *Service) Task(ctx context.Context, q service.TaskQuery, id string) (service.TaskShown, error) {
	r, err := s.ask(ctx, q, bridge.TaskRequest{Action: "show", ID: id})
	if err != nil {
		return service.TaskShown{}, err
	}
	if r.Task == nil {
		return service.TaskShown{}, errkind.New(errkind.Failed, "task %s: the bridge's answer has no task", id)
	}
	evs := make([]task.Event, len(r.Events))
	for i, e := range r.Events {
		evs[i] = e.Event
		evs[i].Verdict, _ = signing.ParseVerdict(e.Verdict)
		evs[i].Ignored = e.Ignored
	}
	return service.TaskShown{Task: *r.Task, Events: evs, More: r.More}, nil
}

// TaskContext implements service.Workspace.
func (s *Service) TaskContext(ctx context.Context, q service.TaskQuery, id string, maxTokens int) (task.Context, error) {
	r, err := s.ask(ctx, q, bridge.TaskRequest{Action: "context", ID: id, MaxTokens: maxTokens})
	if err != nil {
		return task.Context{}, err
	}
	if r.Context == nil {
		return task.Context{}, errkind.New(errkind.Failed, "task %s: the bridge's answer has no context", id)
	}
	return *r.Context, nil
}

// AddTask implements service.Workspace: created by the client's agent.
func (s *Service) AddTask(ctx context.Context, _ service.Actor, q service.TaskQuery, nt service.NewTask) (task.Task, error) {
	r, err := s.ask(ctx, q, bridge.TaskRequest{Action: "add", Title: nt.Title, Body: nt.Body, Depends: nt.Depends})
	if err != nil {
		return task.Task{}, err
	}
	if r.Task == nil {
		return task.Task{}, errkind.New(errkind.Failed, "the bridge's answer has no task")
	}
	return *r.Task, nil
}

// ClaimTask implements service.Workspace. A claim another agent holds is
// a *task.ClaimedError naming it, as on the mount.
func (s *Service) ClaimTask(ctx context.Context, _ service.Actor, q service.TaskQuery, id string) (task.Task, error) {
	if id == "" {
		t, err := s.c.NextTask(ctx, q.Channel)
		if errors.Is(err, task.ErrNoneReady) {
			return task.Task{}, errkind.Wrap(errkind.NotFound, fmt.Errorf("no ready task in channel %s: %w", q.Channel, err))
		}
		return t, s.unreachable(err)
	}
	t, err := s.c.TaskEvent(ctx, q.Channel, id, task.EvClaimed, "", task.Checkpoint{})
	return t, s.claimed(ctx, q, id, err)
}

// claimed makes a claim refused as another agent's a *task.ClaimedError.
func (s *Service) claimed(ctx context.Context, q service.TaskQuery, id string, err error) error {
	var re *remote.RefusedError
	if errors.As(err, &re) && re.Refusal == "claimed" {
		if r, serr := s.ask(ctx, q, bridge.TaskRequest{Action: "show", ID: id}); serr == nil && r.Task != nil {
			return service.TaskError(&task.ClaimedError{Task: id, Owner: r.Task.Owner})
		}
	}
	return s.unreachable(err)
}

// unreachable says of a request no bridge answered that nothing was
// written.
func (s *Service) unreachable(err error) error {
	if errors.Is(err, remote.ErrUnreachable) {
		err = fmt.Errorf("%w; nothing was written", err)
	}
	return taskKind(err)
}

// ReportTask implements service.Workspace.
func (s *Service) ReportTask(ctx context.Context, _ service.Actor, q service.TaskQuery, id string, r service.TaskReport) (task.Task, error) {
	ck := r.Checkpoint
	ck.Text = r.Text
	t, err := s.c.TaskEvent(ctx, q.Channel, id, r.Kind, r.Text, ck)
	return t, s.unreachable(err)
}

// RecordTaskWorktree implements service.Workspace.
func (s *Service) RecordTaskWorktree(ctx context.Context, _ service.Actor, q service.TaskQuery, id, path, branch string) (task.Task, error) {
	t, err := s.c.TaskWorktree(ctx, q.Channel, id, path, branch)
	return t, s.claimed(ctx, q, id, err)
}

// TaskHost implements service.Workspace: this host's name.
func (s *Service) TaskHost() string { return s.c.Host() }

// refusals are the board's rules a bridge names in a refusal, as the
// errors package task returns on the mount.
var refusals = map[string]error{"not-ready": task.ErrNotReady, "closed": task.ErrClosed,
	"not-owner": task.ErrNotOwner, "stale": task.ErrStale}

// refusal is a bridge's refusal that is also the rule's error (is), so
// that errors.Is tells it as on the mount; it reads as the bridge said.
type refusal struct{ err, is error }

func (r refusal) Error() string   { return r.err.Error() }
func (r refusal) Unwrap() []error { return []error{r.err, r.is} }
