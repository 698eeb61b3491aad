package bridge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/task"
)

// The task op: a channel's task board (package task), each action one
// call of the service layer on the mount (service.Mount's task
// operations), with its rules and its refusals.
//
//	task {"action": "list", "channel": C} -> {"ok": true, "tasks": [TASK, ...], "more": bool}
//	task {"action": "show", "channel": C, "id": ID} -> {"ok": true, "task": TASK, "events": [EVENT, ...]}
//	task {"action": "context", "channel": C, "id": ID, "max_tokens": N} -> {"ok": true, "context": CONTEXT}
//	task {"action": "add", "channel": C, "title": T, "body": B, "depends": [ID, ...]} -> {"ok": true, "task": TASK}
//	task {"action": "prepare", "channel": C, "id": ID} -> {"ok": true, "task": TASK}
//	task {"action": "event", "channel": C, "id": ID, "event": EVENT} -> {"ok": true, "task": TASK}
//
// Events are signed (kind task-event) and the bridge never signs one: a
// remote agent prepares (the task after releasing a claim whose owner is
// gone; its next event is number events+1), makes its event for that
// number with task.OwnEvent (or, for the git worktree and branch it works
// in on its own host, task.WorktreeEvent), signs it with its key, and
// sends it; the bridge publishes it with task.Board.ApplySigned, which
// checks that it is the acting agent's, verifies its signature against
// the keyring, and that the board's rules make exactly that event of the
// task's state. A
// refusal by the rules is [CodeConflict] with "refusal" one of "claimed"
// (another agent holds the claim), "stale" (the number was taken
// meanwhile: prepare and sign again), "not-ready", "closed", "not-owner".
// add writes the task file, which is not signed: created_by is the
// acting agent. An event's "verdict" in show is
// the bridge's. Replies too large are cut: "more" says tasks were left
// out of a list, and show keeps the newest events that fit.
const OpTask = "task"

// TaskRequest is a task op's request.
type TaskRequest struct {
	Action    string          `json:"action"`
	Channel   string          `json:"channel"`
	ID        string          `json:"id,omitempty"`
	Title     string          `json:"title,omitempty"`
	Body      string          `json:"body,omitempty"`
	Depends   []string        `json:"depends,omitempty"`
	MaxTokens int             `json:"max_tokens,omitempty"`
	Event     json.RawMessage `json:"event,omitempty"`
}

// TaskEvent is an event in a show reply, with the bridge's verdict.
type TaskEvent struct {
	task.Event
	Verdict string `json:"verdict"`
	Ignored bool   `json:"ignored,omitempty"`
}

// TaskReply answers a task op.
type TaskReply struct {
	Reply
	Task    *task.Task    `json:"task,omitempty"`
	Tasks   []task.Task   `json:"tasks,omitempty"`
	Events  []TaskEvent   `json:"events,omitempty"`
	Context *task.Context `json:"context,omitempty"`
	More    bool          `json:"more,omitempty"`
	Refusal string        `json:"refusal,omitempty"`
}

func (s *Server) task(agent string, data []byte) (any, error) {
	var req TaskRequest
	if err := DecodeRequest(data, &req); err != nil {
		return nil, err
	}
	if err := checkTaskRequest(req); err != nil {
		return nil, err
	}
	ctx, q, a := context.Background(), service.TaskQuery{Channel: req.Channel}, service.Actor{Name: agent}
	what := "task " + req.Action
	out := TaskReply{Reply: Reply{OK: true}}
	var t task.Task
	var err error
	switch req.Action {
	case "list":
		return s.taskList(ctx, q, what)
	case "show":
		return s.taskShow(ctx, q, req.ID, what)
	case "context":
		// A reply holds about MaxReply/4 tokens' worth of text with room
		// for its JSON.
		n := min(cmp.Or(req.MaxTokens, task.DefaultMaxTokens), s.cfg.MaxReply/8)
		c, err := s.svc.TaskContext(ctx, q, req.ID, n)
		if err != nil {
			return nil, classify(what, err)
		}
		out.Context = &c
		return out, nil
	case "add":
		t, err = s.svc.AddTask(ctx, a, q, service.NewTask{Title: req.Title, Body: req.Body, Depends: req.Depends})
		if err == nil {
			s.log.Info("bridge: task added", "channel", req.Channel, "task", t.ID, "agent", agent)
		}
	case "prepare":
		t, err = s.svc.PrepareTask(ctx, q, req.ID)
	case "event":
		return s.taskEvent(ctx, a, q, req)
	}
	if err != nil {
		return nil, classify(what, err)
	}
	out.Task = &t
	return out, nil
}

// checkTaskRequest refuses a request whose fields do not fit its action.
func checkTaskRequest(req TaskRequest) error {
	if err := tree.CheckName("channel", req.Channel); err != nil {
		return Errorf(CodeInvalid, "task: %v", err)
	}
	switch req.Action {
	case "list", "add":
		if req.ID != "" {
			return Errorf(CodeInvalid, "task %s: no id", req.Action)
		}
	case "show", "context", "prepare", "event":
		if _, err := task.ParseID(req.ID); err != nil {
			return Errorf(CodeInvalid, "task %s: %v", req.Action, err)
		}
	default:
		return Errorf(CodeInvalid, "task: unknown action %q", tree.Printable(req.Action))
	}
	if req.Action != "event" && len(req.Event) > 0 || req.Action != "add" && (req.Title != "" || req.Body != "" || len(req.Depends) > 0) {
		return Errorf(CodeInvalid, "task %s: fields of another action", req.Action)
	}
	if req.MaxTokens < 0 {
		return Errorf(CodeInvalid, "task context: max_tokens %d is negative", req.MaxTokens)
	}
	return nil
}

// taskList answers list: as many tasks as a reply holds.
func (s *Server) taskList(ctx context.Context, q service.TaskQuery, what string) (any, error) {
	l, err := s.svc.Tasks(ctx, q)
	if err != nil {
		return nil, classify(what, err)
	}
	out := TaskReply{Reply: Reply{OK: true}, Tasks: []task.Task{}}
	size := replyRoom
	for _, t := range l.Tasks {
		enc, _ := json.Marshal(t)
		if size+len(enc)+1 > s.cfg.MaxReply {
			out.More = true
			break
		}
		size += len(enc) + 1
		out.Tasks = append(out.Tasks, t)
	}
	return out, nil
}

// taskShow answers show: the task and the newest events a reply holds.
func (s *Server) taskShow(ctx context.Context, q service.TaskQuery, id, what string) (any, error) {
	shown, err := s.svc.Task(ctx, q, id)
	if err != nil {
		return nil, classify(what, err)
	}
	t, evs := shown.Task, shown.Events
	out := TaskReply{Reply: Reply{OK: true}, Task: &t}
	enc, _ := json.Marshal(t)
	size := replyRoom + len(enc)
	for i := len(evs) - 1; i >= 0; i-- { // the newest that fit
		ev := TaskEvent{Event: evs[i], Verdict: evs[i].Verdict.String(), Ignored: evs[i].Ignored}
		enc, _ := json.Marshal(ev)
		if size+len(enc)+1 > s.cfg.MaxReply {
			out.More = true
			break
		}
		size += len(enc) + 1
		out.Events = append(out.Events, ev)
	}
	slices.Reverse(out.Events)
	return out, nil
}

// taskEvent publishes a remote agent's signed event; a refusal of the
// board's rules is CodeConflict naming it.
func (s *Server) taskEvent(ctx context.Context, a service.Actor, q service.TaskQuery, req TaskRequest) (any, error) {
	if len(req.Event) == 0 {
		return nil, Errorf(CodeInvalid, "task event: no event")
	}
	var e task.Event
	if err := json.Unmarshal(req.Event, &e); err != nil {
		return nil, Errorf(CodeInvalid, "task event: %v", err)
	}
	if e.Agent != a.Name {
		return nil, Errorf(CodeForbidden, "task event: the event is %q's, not %q's", tree.Printable(e.Agent), a.Name)
	}
	t, err := s.svc.ApplyTaskEvent(ctx, a, q, req.ID, e)
	if r, ok := taskRefusal(err); ok {
		s.log.Info("bridge: request refused", "op", OpTask, "agent", a.Name, "code", CodeConflict, "refusal", r, "err", err)
		return TaskReply{Reply: Reply{Code: CodeConflict, Error: fmt.Sprintf("task %s: %v", e.Event, err)}, Refusal: r}, nil
	}
	if err != nil {
		return nil, classify("task "+e.Event, err)
	}
	s.log.Info("bridge: task event", "channel", req.Channel, "task", req.ID, "event", e.Event, "seq", e.Seq, "agent", a.Name)
	return TaskReply{Reply: Reply{OK: true}, Task: &t}, nil
}

// taskRefusal names a refusal of the board's rules.
func taskRefusal(err error) (string, bool) {
	var ce *task.ClaimedError
	switch {
	case err == nil:
		return "", false
	case errors.As(err, &ce):
		return "claimed", true
	case errors.Is(err, task.ErrStale):
		return "stale", true
	case errors.Is(err, task.ErrNotReady):
		return "not-ready", true
	case errors.Is(err, task.ErrClosed):
		return "closed", true
	case errors.Is(err, task.ErrNotOwner):
		return "not-owner", true
	}
	return "", false
}
