package mcpserver

import (
	"strconv"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/task"
)

// TestTaskContextTool: task_context returns the task, its newest
// checkpoints within max_tokens and its dependencies' outcomes.
func TestTaskContextTool(t *testing.T) {
	root := tree.Root(t.TempDir())
	s, cs := connect(t, root)
	b, _ := task.New(root, "dev")
	b.Signer = s.cfg.Signer // claude's own events as its tools sign them (via a bridge, claude has a key)
	for _, nt := range []task.NewTask{{Title: "parser", By: "lead"}, {Title: "fuzz", Body: "an hour", Depends: []string{"t1"}, By: "lead"}} {
		if _, err := b.Add(nt); err != nil {
			t.Fatal(err)
		}
	}
	steps := []func() error{
		func() error { _, err := b.Claim("t1", "codex"); return err },
		func() error { _, err := b.Finish("t1", "codex", "merged"); return err },
		func() error { _, err := b.Claim("t2", "claude"); return err },
	}
	for i := 1; i <= 20; i++ {
		text := "round " + strconv.Itoa(i) + " " + strings.Repeat("q", 100)
		steps = append(steps, func() error {
			_, err := b.Record("t2", "claude", task.Checkpoint{Type: task.CkProgress, Text: text, Files: []string{"f.go"}})
			return err
		})
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	var c task.Context
	if e := call(t, cs, "task_context", map[string]any{"id": "t2", "max_tokens": 300}, &c); e != "" {
		t.Fatal(e)
	}
	if c.Task.ID != "t2" || c.Task.Owner != "claude" || c.Task.Body != "an hour" || len(c.Dependencies) != 1 || c.Dependencies[0].Outcome != "merged" {
		t.Errorf("task_context: %+v", c)
	}
	n := len(c.Checkpoints)
	if !c.Cut || c.Omitted == 0 || n+c.Omitted != 20 || n == 0 || !strings.HasPrefix(c.Checkpoints[n-1].Text, "round 20 ") || c.Tokens > 300 {
		t.Errorf("task_context cut: %d kept, %d omitted, %d tokens; want the newest within 300 tokens", n, c.Omitted, c.Tokens)
	}
	if e := call(t, cs, "task_context", map[string]any{"id": "t2"}, &c); e != "" || c.MaxTokens != task.DefaultMaxTokens || len(c.Checkpoints) != 20 {
		t.Errorf("task_context default: %d checkpoints, max %d, %s", len(c.Checkpoints), c.MaxTokens, e)
	}
	if e := call(t, cs, "task_context", map[string]any{"id": "t9"}, nil); !strings.Contains(e, "no such task") {
		t.Errorf("task_context t9 = %q", e)
	}
}
