package prompt

import (
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/task"
)

// TestLoadTasks: the prompt names the tasks the agent has claimed (not
// another's, not finished), in id order, each with the newest checkpoint
// of its claim, its text cut to TaskCheckpointSize; at most MaxTasks.
func TestLoadTasks(t *testing.T) {
	root := tree.Root(t.TempDir())
	if got := LoadTasks(root, "dev", "codex", nil); len(got) != 0 {
		t.Errorf("no board: %+v", got)
	}
	b, err := task.New(root, "dev")
	if err != nil {
		t.Fatal(err)
	}
	for i := range MaxTasks + 3 {
		if _, err := b.Add(task.NewTask{Title: "task " + string(rune('a'+i)), By: "lead"}); err != nil {
			t.Fatal(err)
		}
	}
	must := func(_ task.Task, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Claim("t1", "codex"))
	must(b.Record("t1", "codex", task.Checkpoint{Text: "first"}))
	must(b.Record("t1", "codex", task.Checkpoint{Type: task.CkDecision, Text: strings.Repeat("long ", 1000), Files: []string{"a.go", "b.go"}}))
	must(b.Claim("t2", "claude"))
	must(b.Claim("t3", "codex"))
	must(b.Finish("t3", "codex", "ok"))
	must(b.Claim("t4", "codex"))
	must(b.Record("t4", "codex", task.Checkpoint{Text: strings.Repeat("row\n", 500)}))
	got := LoadTasks(root, "dev", "codex", nil)
	if len(got) != 2 || got[0].ID != "t1" || got[1].ID != "t4" {
		t.Fatalf("tasks %+v, want t1 and t4", got)
	}
	if c := got[0]; c.Type != task.CkDecision || c.Files != "a.go, b.go" || len(c.Checkpoint) > TaskCheckpointSize+8 ||
		!strings.HasPrefix(c.Checkpoint, "long long") || !strings.HasSuffix(c.Checkpoint, "[…]") || c.Title != "task a" {
		t.Errorf("t1 %+v", c)
	}
	if c := got[1].Checkpoint; strings.Count(c, "\n") != TaskCheckpointRows-1 || !strings.HasSuffix(c, "row […]") {
		t.Errorf("t4's checkpoint %q, want %d rows", c, TaskCheckpointRows)
	}
	for _, id := range []string{"t5", "t6", "t7", "t8"} {
		must(b.Claim(id, "codex"))
	}
	if got := LoadTasks(root, "dev", "codex", nil); len(got) != MaxTasks {
		t.Errorf("%d tasks, want at most %d", len(got), MaxTasks)
	}
}

// TestTasksBounded: however many and however long, the claimed tasks add
// a bounded amount to the default prompt.
func TestTasksBounded(t *testing.T) {
	d := minimalData()
	base, err := Default().Render(d)
	if err != nil {
		t.Fatal(err)
	}
	for range MaxTasks {
		d.Tasks = append(d.Tasks, Task{ID: "t123456789", Title: strings.Repeat("x", 200),
			Checkpoint: strings.Repeat("y", TaskCheckpointSize) + " […]", Type: "progress", Files: strings.Repeat("f", 200)})
	}
	got, err := Default().Render(d)
	if err != nil {
		t.Fatal(err)
	}
	if grew, limit := len(got)-len(base), 1024+MaxTasks*(TaskCheckpointSize+600); grew > limit {
		t.Errorf("the tasks add %d bytes, over %d", grew, limit)
	}
	if !strings.Contains(got, "# Your unfinished tasks in #team-docs") {
		t.Errorf("no tasks section:\n%s", got)
	}
}
