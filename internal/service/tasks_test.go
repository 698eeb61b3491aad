package service

import (
	"context"
	"errors"
	"testing"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/workspace/task"
)

// TestTaskRules: the board's refusals and the status filter, with their
// kinds, once for every door (collab task, MCP, the page, the bridge).
func TestTaskRules(t *testing.T) {
	m, _ := testMount(t)
	ctx := context.Background()
	q := TaskQuery{Channel: "dev"}
	lead, codex, gemini := Actor{Name: "lead"}, Actor{Name: "codex"}, Actor{Name: "coder@i1"}
	if _, err := m.AddTask(ctx, lead, q, NewTask{Title: "parser"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddTask(ctx, lead, q, NewTask{Title: "tests", Depends: []string{"t1"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		do   func() error
		kind errkind.Kind // Failed: no error
	}{
		{"add without title", func() error { _, err := m.AddTask(ctx, lead, q, NewTask{}); return err }, errkind.Invalid},
		{"add a bad dependency", func() error {
			_, err := m.AddTask(ctx, lead, q, NewTask{Title: "x", Depends: []string{"../x"}})
			return err
		}, errkind.Invalid},
		{"add an unknown dependency", func() error {
			_, err := m.AddTask(ctx, lead, q, NewTask{Title: "x", Depends: []string{"t9"}})
			return err
		}, errkind.NotFound},
		{"a bad channel", func() error { _, err := m.Tasks(ctx, TaskQuery{Channel: "../x"}); return err }, errkind.Invalid},
		{"a bad status", func() error { _, err := m.Tasks(ctx, TaskQuery{Channel: "dev", Status: []string{"nope"}}); return err }, errkind.Invalid},
		{"a bad agent", func() error { _, err := m.ClaimTask(ctx, Actor{Name: "co der"}, q, "t1"); return err }, errkind.Invalid},
		{"a bad id", func() error { _, err := m.ClaimTask(ctx, codex, q, "../t1"); return err }, errkind.Invalid},
		{"show a task not there", func() error { _, err := m.Task(ctx, q, "t9"); return err }, errkind.NotFound},
		{"claim one waiting", func() error { _, err := m.ClaimTask(ctx, codex, q, "t2"); return err }, errkind.Conflict},
		{"claim by address", func() error { _, err := m.ClaimTask(ctx, gemini, q, "t1"); return err }, errkind.Failed},
		{"claim one held", func() error { _, err := m.ClaimTask(ctx, codex, q, "t1"); return err }, errkind.Conflict},
		{"next with none ready", func() error { _, err := m.ClaimTask(ctx, codex, q, ""); return err }, errkind.NotFound},
		{"report on another's", func() error {
			_, err := m.ReportTask(ctx, codex, q, "t1", TaskReport{Kind: task.EvCheckpoint, Text: "x"})
			return err
		}, errkind.Conflict},
		{"an unknown report", func() error { _, err := m.ReportTask(ctx, gemini, q, "t1", TaskReport{Kind: "frob"}); return err }, errkind.Invalid},
		{"finish it", func() error {
			_, err := m.ReportTask(ctx, Actor{Name: "coder--i1"}, q, "t1", TaskReport{Kind: task.EvDone, Text: "merged"})
			return err
		}, errkind.Failed},
		{"finish it again", func() error {
			_, err := m.ReportTask(ctx, gemini, q, "t1", TaskReport{Kind: task.EvDone, Text: "again"})
			return err
		}, errkind.Conflict},
	}
	for _, tt := range tests {
		err := tt.do()
		if tt.kind == errkind.Failed && err != nil || tt.kind != errkind.Failed && !errkind.Is(err, tt.kind) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.kind)
		}
	}
	_, err := m.ClaimTask(ctx, codex, q, "t1")
	if !errors.Is(err, task.ErrClosed) {
		t.Errorf("claim of a finished task: %v", err)
	}
	l, err := m.Tasks(ctx, TaskQuery{Channel: "dev", Status: []string{"ready"}})
	if err != nil || len(l.Tasks) != 1 || l.Tasks[0].ID != "t2" {
		t.Errorf("Tasks(ready) = %+v, %v; want t2", l, err)
	}
}

// TestTaskClaimedBy: a claim another agent holds is Conflict and names
// the holder (*task.ClaimedError), which MCP returns as already_claimed_by.
func TestTaskClaimedBy(t *testing.T) {
	m, _ := testMount(t)
	ctx := context.Background()
	q := TaskQuery{Channel: "dev"}
	if _, err := m.AddTask(ctx, Actor{Name: "lead"}, q, NewTask{Title: "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ClaimTask(ctx, Actor{Name: "coder@i1"}, q, "t1"); err != nil {
		t.Fatal(err)
	}
	_, err := m.ClaimTask(ctx, Actor{Name: "codex"}, q, "t1")
	var ce *task.ClaimedError
	if !errkind.Is(err, errkind.Conflict) || !errors.As(err, &ce) || ce.Owner != "coder--i1" {
		t.Errorf("claim of a held task: %v, want Conflict naming coder--i1", err)
	}
}

// TestKeyRules: the keyring's operations and their kinds.
func TestKeyRules(t *testing.T) {
	m, root := testMount(t)
	ctx := context.Background()
	const pub = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="
	req := KeyRequest{Keyring: root.Keys()}
	for _, tt := range []struct {
		name string
		do   func() error
		kind errkind.Kind
	}{
		{"trust a bad agent", func() error { _, err := m.TrustKey(ctx, KeyRequest{Agent: "../x", Public: pub}); return err }, errkind.Invalid},
		{"trust a bad key", func() error { _, err := m.TrustKey(ctx, KeyRequest{Agent: "alice", Public: "nope"}); return err }, errkind.Invalid},
		{"revoke what is not there", func() error { _, err := m.RevokeKey(ctx, KeyRequest{Agent: "bob"}); return err }, errkind.NotFound},
		{"list a bad agent", func() error { _, err := m.Keys(ctx, req, []string{"a/b"}); return err }, errkind.Invalid},
	} {
		if err := tt.do(); !errkind.Is(err, tt.kind) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.kind)
		}
	}
	l, err := m.TrustKey(ctx, KeyRequest{Agent: "coder@i1", Public: pub})
	if err != nil || len(l.Keys) != 1 || l.Keys[0].Agent != "coder--i1" {
		t.Fatalf("TrustKey(coder@i1) = %+v, %v", l, err)
	}
	if l, err := m.RevokeKey(ctx, KeyRequest{Agent: "coder--i1", Public: pub}); err != nil || l.Keys[0].Revoked == nil {
		t.Errorf("RevokeKey = %+v, %v", l, err)
	}
}
