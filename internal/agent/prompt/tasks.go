package prompt

import (
	"strings"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/task"
)

// Bounds on what a prompt shows of the agent's claimed tasks, whatever the
// template.
const (
	MaxTasks           = 5    // tasks shown
	TaskCheckpointSize = 1024 // bytes of a checkpoint's text
	TaskCheckpointRows = 20   // lines of it
	taskFilesSize      = 256  // bytes of its files, joined
)

// Task is a task the agent has claimed and not finished, as a prompt
// shows it (context recovery: a restarted agent picks up where it left
// off): .ID, .Title, and the newest checkpoint of its claim, if any:
// .Checkpoint (its text, at most TaskCheckpointSize bytes in
// TaskCheckpointRows lines), .Type, .Time
// and .Files (joined with ", ").
type Task struct {
	ID, Title  string
	Checkpoint string
	Type       string
	Time       time.Time
	Files      string
}

// LoadTasks returns the tasks agent has claimed on the board of channel
// ch, at most MaxTasks in id order, each with its newest checkpoint; the
// board's events are judged with v as the board judges them (a forged
// checkpoint is left out). It only reads, and is meant to be called for
// every prompt. A board that cannot be read is no tasks: the prompt is
// built without them.
func LoadTasks(root tree.Root, ch, agent string, v *signing.Verifier) []Task {
	b, err := task.New(root, ch)
	if err != nil {
		return nil
	}
	b.Verifier = v
	claims, err := b.ClaimedBy(agent, MaxTasks)
	if err != nil {
		return nil
	}
	out := make([]Task, 0, len(claims))
	for _, c := range claims {
		t := Task{ID: c.Task.ID, Title: oneLine(c.Task.Title)}
		if cp := c.Checkpoint; cp.Seq > 0 {
			t.Checkpoint = cutUTF8(cp.Summary, TaskCheckpointSize)
			if lines := strings.SplitAfter(t.Checkpoint, "\n"); len(lines) > TaskCheckpointRows {
				t.Checkpoint = strings.TrimSuffix(strings.Join(lines[:TaskCheckpointRows], ""), "\n")
			}
			if len(t.Checkpoint) < len(cp.Summary) {
				t.Checkpoint += " […]"
			}
			t.Type, t.Time = cp.Type, cp.Time
			if t.Type == "" {
				t.Type = task.CkProgress
			}
			t.Files = oneLine(cutUTF8(strings.Join(cp.Files, ", "), taskFilesSize))
		}
		out = append(out, t)
	}
	return out
}
