package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/task"
)

// TaskListArgs are task_list's arguments.
type TaskListArgs struct {
	Status []string `json:"status,omitempty" jsonschema:"only tasks in these states: pending, ready, claimed, done, failed"`
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
}

func addTaskTools(s *Server) error {
	addTool(s, "task_list", "List the channel's task board, in id order.", s.taskList)
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
	q.Status = in.Status
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
		r = service.TaskReport{Kind: task.EvCheckpoint, Text: in.Summary}
	case "completed", "done":
		r = service.TaskReport{Kind: task.EvDone, Text: in.Outcome}
	case "failed":
		r = service.TaskReport{Kind: task.EvFailed, Text: in.Error}
	default:
		return task.Task{}, fmt.Errorf("status %q is not one of in_progress, completed, failed", in.Status)
	}
	a, q := s.taskActs()
	return s.svc.ReportTask(ctx, a, q, in.ID, r)
}
