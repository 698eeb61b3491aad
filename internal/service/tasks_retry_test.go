package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/workspace/task"
)

// TestRetryTask: a failed task blocks its dependents (status "blocked"),
// anyone on the board retries it through ReportTask, and a task not
// failed is Conflict.
func TestRetryTask(t *testing.T) {
	m, _ := testMount(t)
	ctx := context.Background()
	q := TaskQuery{Channel: "dev"}
	lead, codex := Actor{Name: "lead"}, Actor{Name: "codex"}
	for _, nt := range []NewTask{{Title: "lexer"}, {Title: "parser", Depends: []string{"t1"}}} {
		if _, err := m.AddTask(ctx, lead, q, nt); err != nil {
			t.Fatal(err)
		}
	}
	retry := TaskReport{Kind: task.EvRetried, Text: "try again"}
	if _, err := m.ReportTask(ctx, lead, q, "t1", retry); !errkind.Is(err, errkind.Conflict) || !errors.Is(err, task.ErrNotFailed) {
		t.Errorf("retry of a pending task: %v, want Conflict", err)
	}
	if _, err := m.ClaimTask(ctx, codex, q, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ReportTask(ctx, codex, q, "t1", TaskReport{Kind: task.EvFailed, Text: "no grammar"}); err != nil {
		t.Fatal(err)
	}
	l, err := m.Tasks(ctx, TaskQuery{Channel: "dev", Status: []string{"blocked"}})
	if err != nil || len(l.Tasks) != 1 || l.Tasks[0].ID != "t2" || l.Tasks[0].BlockedBy[0] != "t1" {
		t.Fatalf("blocked tasks: %+v, %v", l, err)
	}
	got, err := m.ReportTask(ctx, lead, q, "t1", retry)
	if err != nil || got.Status != task.Pending || !got.Ready || got.LastError != "no grammar" {
		t.Fatalf("retry: %+v, %v", got, err)
	}
	if l, err := m.Tasks(ctx, TaskQuery{Channel: "dev", Status: []string{"blocked"}}); err != nil || len(l.Tasks) != 0 {
		t.Errorf("blocked after the retry: %+v, %v", l, err)
	}
}

// TestTaskDetails: a checkpoint's and an outcome's detail, from inline
// JSON or a file, reach the board and its context; a detail that is not
// an object is Invalid.
func TestTaskDetails(t *testing.T) {
	m, _ := testMount(t)
	ctx := context.Background()
	q := TaskQuery{Channel: "dev"}
	codex := Actor{Name: "codex"}
	if _, err := m.AddTask(ctx, codex, q, NewTask{Title: "auth"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ClaimTask(ctx, codex, q, "t1"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "d.json")
	if err := os.WriteFile(file, []byte(`{"packages_added": ["passport"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		inline, path string
		kind         errkind.Kind
	}{
		{`[1]`, "", errkind.Invalid},
		{`{}`, file, errkind.Invalid},
		{"", filepath.Join(t.TempDir(), "none.json"), errkind.NotFound},
	} {
		if _, err := ReadTaskDetail(c.inline, c.path); !errkind.Is(err, c.kind) {
			t.Errorf("ReadTaskDetail(%q, %q): %v, want %v", c.inline, c.path, err, c.kind)
		}
	}
	d, err := ReadTaskDetail(`{"reason": "API-first"}`, "")
	if err != nil {
		t.Fatal(err)
	}
	ck := task.Checkpoint{Type: task.CkDecision, Detail: d}
	if _, err := m.ReportTask(ctx, codex, q, "t1", TaskReport{Kind: task.EvCheckpoint, Text: "JWT", Checkpoint: ck}); err != nil {
		t.Fatal(err)
	}
	od, err := ReadTaskDetail("", file)
	if err != nil {
		t.Fatal(err)
	}
	done, err := FinishTask(ctx, m, codex, q, "t1", TaskReport{Text: "works", Checkpoint: task.Checkpoint{Detail: od}}, DoneWorktree{})
	if err != nil || done.OutcomeDetail.String() != `{"packages_added":["passport"]}` {
		t.Fatalf("done: %s, %v", done.OutcomeDetail, err)
	}
	c, err := m.TaskContext(ctx, q, "t1", 0)
	if err != nil || len(c.Checkpoints) != 1 || c.Checkpoints[0].Detail.String() != `{"reason":"API-first"}` ||
		c.Task.OutcomeDetail.String() != done.OutcomeDetail.String() {
		t.Errorf("context: %+v, %v", c, err)
	}
}
