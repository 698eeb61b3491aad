package mcpserver

import (
	"context"

	"github.com/collabdev/collab/internal/workspace/task"
)

// TaskContextArgs are task_context's arguments.
type TaskContextArgs struct {
	ID        string `json:"id" jsonschema:"the task, such as t3"`
	MaxTokens int    `json:"max_tokens,omitempty" jsonschema:"cut the context to about this many tokens (bytes/4); default 8000"`
}

// addTaskContextTool registers task_context (with the task tools): seed
// 003's task_load_context, what the agent needs to resume a task. It takes
// id and max_tokens (default 8000) and returns [task.Context] (see the
// task package doc's Context).
func addTaskContextTool(s *Server) error {
	addTool(s, "task_context", "What you need to resume a task: the task, its checkpoints (newest kept when cut) "+
		"and the outcomes of the tasks it depends on, cut to max_tokens (default 8000).", s.taskContext)
	return nil
}

func (s *Server) taskContext(ctx context.Context, in TaskContextArgs) (task.Context, error) {
	_, q := s.taskActs()
	return s.svc.TaskContext(ctx, q, in.ID, in.MaxTokens)
}
