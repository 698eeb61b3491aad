package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/task"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TaskListArgs are task_list's arguments.
type TaskListArgs struct {
	Status StatusList `json:"status,omitempty"`
}

// StatusList is task_list's status: a list of states, or one string
// (several comma-separated), as seed 003's clients pass either.
type StatusList []string

// UnmarshalJSON reads a string or a list of strings.
func (l *StatusList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = nil
		for s := range strings.SplitSeq(one, ",") {
			if s = strings.TrimSpace(s); s != "" {
				*l = append(*l, s)
			}
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("status: a string or a list of strings: %w", err)
	}
	*l = list
	return nil
}

// taskListSchema is task_list's input schema: status a string or a list,
// which Go's types do not describe.
var taskListSchema = map[string]any{
	"type": "object", "additionalProperties": false,
	"properties": map[string]any{"status": map[string]any{
		"description": "only tasks in these states: pending, ready, blocked (a dependency failed), claimed, done, failed; a string (comma-separated) or a list",
		"anyOf":       []any{map[string]any{"type": "string"}, map[string]any{"type": "array", "items": map[string]any{"type": "string"}}},
	}},
}

// TaskAddArgs are task_add's arguments.
type TaskAddArgs struct {
	Title   string   `json:"title" jsonschema:"the task's title, one line"`
	Body    string   `json:"body,omitempty" jsonschema:"what to do"`
	Depends []string `json:"depends,omitempty" jsonschema:"ids of tasks of this channel that must be done first, such as t1"`
}

// TaskRetryArgs are task_retry's arguments.
type TaskRetryArgs struct {
	ID   string `json:"id" jsonschema:"the failed task, such as t3"`
	Note string `json:"note,omitempty" jsonschema:"why it is retried"`
}

// TaskListResult is what task_list returns.
type TaskListResult struct {
	Tasks []task.Task `json:"tasks"`
}

// TaskClaimArgs are task_claim's arguments.
type TaskClaimArgs struct {
	TaskID string `json:"task_id,omitempty" jsonschema:"the task to claim, such as t3; empty: the first ready task"`
}

// TaskClaimResult is what task_claim returns.
type TaskClaimResult struct {
	Success          bool       `json:"success"`
	AlreadyClaimedBy string     `json:"already_claimed_by,omitempty"`
	Task             *task.Task `json:"task,omitempty"`
}

// TaskUpdateArgs are task_update's arguments.
type TaskUpdateArgs struct {
	ID      string `json:"id" jsonschema:"the task, such as t3"`
	Status  string `json:"status" jsonschema:"in_progress (a checkpoint; needs summary), completed (needs outcome) or failed (needs error)"`
	Summary string `json:"summary,omitempty" jsonschema:"what has been done so far"`
	Outcome string `json:"outcome,omitempty" jsonschema:"what came of the task"`
	Error   string `json:"error,omitempty" jsonschema:"why the task failed"`
	// A checkpoint's type, files and detail; the outcome's detail.
	Type          string      `json:"type,omitempty" jsonschema:"in_progress: the checkpoint's type: plan, progress (default), decision, error, recovery or complete"`
	Files         []string    `json:"files,omitempty" jsonschema:"in_progress: the files changed"`
	Detail        task.Detail `json:"detail,omitempty" jsonschema:"in_progress: a structured detail of the checkpoint (a JSON object)"`
	OutcomeDetail task.Detail `json:"outcome_detail,omitempty" jsonschema:"completed: a structured detail of the outcome (a JSON object)"`
}

func addTaskTools(s *Server) error {
	addToolSchema(s, "task_list", "List the channel's task board, in id order. A task whose dependency failed is blocked "+
		"(blocked_by) until that one is retried and done.", taskListSchema, s.taskList)
	addTool(s, "task_add", "Add a task to the channel's board, created by this agent; returns it, pending.", s.taskAdd)
	addTool(s, "task_retry", "Put a failed task back to pending (anyone may); its checkpoints and attempts are kept.", s.taskRetry)
	addTool(s, "task_claim", "Claim a task for this agent (atomic: one agent wins). Without task_id, claims the first ready task.", s.taskClaim)
	addTool(s, "task_update", "Report on a task this agent has claimed: a checkpoint, completed or failed.", s.taskUpdate)
	return addTaskContextTool(s) // task_context.go
}

// taskActs is the board as the tools see it: the server's channel, as
// its agent, signed with its key.
func (s *Server) taskActs() (service.Actor, service.TaskQuery) {
	return service.Actor{Name: s.cfg.Agent, Signer: s.cfg.Signer, Mode: channel.ModeMCP}, service.TaskQuery{Channel: s.cfg.Channel}
}

func (s *Server) taskList(ctx context.Context, in TaskListArgs) (TaskListResult, error) {
	_, q := s.taskActs()
	q.Status = []string(in.Status)
	l, err := s.svc.Tasks(ctx, q)
	if err != nil {
		return TaskListResult{}, err
	}
	return TaskListResult{Tasks: l.Tasks}, nil
}

func (s *Server) taskClaim(ctx context.Context, in TaskClaimArgs) (TaskClaimResult, error) {
	a, q := s.taskActs()
	t, err := s.svc.ClaimTask(ctx, a, q, in.TaskID)
	var ce *task.ClaimedError
	switch {
	case errors.As(err, &ce):
		return TaskClaimResult{AlreadyClaimedBy: ce.Owner}, nil
	case err != nil:
		return TaskClaimResult{}, err
	}
	return TaskClaimResult{Success: true, Task: &t}, nil
}

func (s *Server) taskUpdate(ctx context.Context, in TaskUpdateArgs) (task.Task, error) {
	var r service.TaskReport
	switch strings.ToLower(in.Status) {
	case "in_progress", "checkpoint":
		r = service.TaskReport{Kind: task.EvCheckpoint, Text: in.Summary,
			Checkpoint: task.Checkpoint{Type: in.Type, Files: in.Files, Detail: in.Detail}}
		if in.Type != "" {
			if err := task.CheckType(in.Type); err != nil {
				return task.Task{}, errkind.Wrap(errkind.Invalid, err)
			}
		}
	case "completed", "done":
		r = service.TaskReport{Kind: task.EvDone, Text: in.Outcome, Checkpoint: task.Checkpoint{Detail: in.OutcomeDetail}}
	case "failed":
		r = service.TaskReport{Kind: task.EvFailed, Text: in.Error}
	default:
		return task.Task{}, fmt.Errorf("status %q is not one of in_progress, completed, failed", in.Status)
	}
	if r.Kind != task.EvCheckpoint && (in.Type != "" || len(in.Files) > 0 || len(in.Detail) > 0) || r.Kind != task.EvDone && len(in.OutcomeDetail) > 0 {
		return task.Task{}, errkind.New(errkind.Invalid, "type, files and detail go with in_progress, outcome_detail with completed")
	}
	a, q := s.taskActs()
	return s.svc.ReportTask(ctx, a, q, in.ID, r)
}

func (s *Server) taskAdd(ctx context.Context, in TaskAddArgs) (task.Task, error) {
	a, q := s.taskActs()
	return s.svc.AddTask(ctx, a, q, service.NewTask{Title: in.Title, Body: in.Body, Depends: in.Depends})
}

func (s *Server) taskRetry(ctx context.Context, in TaskRetryArgs) (task.Task, error) {
	a, q := s.taskActs()
	return s.svc.ReportTask(ctx, a, q, in.ID, service.TaskReport{Kind: task.EvRetried, Text: in.Note})
}

// addToolSchema is addTool with an input schema of its own, for
// arguments Go's types do not describe (task_list's status).
func addToolSchema[In, Out any](s *Server, name, description string, schema map[string]any, h func(ctx context.Context, in In) (Out, error)) {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: name, Description: description, InputSchema: schema},
		func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			out, err := h(ctx, in)
			if err != nil {
				s.cfg.Logger.Info("tool failed", keyTool, name, keyErr, err)
				return toolError(err), out, nil
			}
			return nil, out, nil
		})
}
