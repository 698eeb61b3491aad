package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/task"
)

// TestSeedTaskTools: seed 003's lifecycle through the tools: task_add,
// a checkpoint with its type, files and detail, a failure that blocks the
// dependent task, task_list with status as a string or a list,
// task_retry, completed with an outcome detail, and task_context showing
// the details.
func TestSeedTaskTools(t *testing.T) {
	_, cs := connect(t, tree.Root(t.TempDir()))
	var tk task.Task
	if e := call(t, cs, "task_add", map[string]any{"title": "oauth", "body": "set it up"}, &tk); e != "" || tk.ID != "t1" || tk.CreatedBy != "claude" {
		t.Fatalf("task_add = %+v, %s", tk, e)
	}
	if e := call(t, cs, "task_add", map[string]any{"title": "login", "depends": []string{"t1"}}, &tk); e != "" || tk.ID != "t2" {
		t.Fatalf("task_add t2 = %+v, %s", tk, e)
	}
	if e := call(t, cs, "task_add", map[string]any{"title": ""}, nil); !strings.Contains(e, "title") {
		t.Errorf("task_add without title = %q", e)
	}
	if e := call(t, cs, "task_claim", map[string]any{"task_id": "t1"}, nil); e != "" {
		t.Fatal(e)
	}
	ck := map[string]any{"id": "t1", "status": "in_progress", "summary": "chose JWT", "type": "decision",
		"files": []string{"src/auth.ts"}, "detail": map[string]any{"reason": "API-first", "n": 1.5}}
	if e := call(t, cs, "task_update", ck, &tk); e != "" || tk.Summary != "chose JWT" {
		t.Fatalf("task_update checkpoint = %+v, %s", tk, e)
	}
	for _, bad := range []map[string]any{
		{"id": "t1", "status": "in_progress", "summary": "x", "type": "whim"},
		{"id": "t1", "status": "failed", "error": "x", "detail": map[string]any{"a": 1}},
	} {
		if e := call(t, cs, "task_update", bad, nil); e == "" {
			t.Errorf("task_update %v was taken", bad)
		}
	}
	if e := call(t, cs, "task_update", map[string]any{"id": "t1", "status": "failed", "error": "callback rejected"}, nil); e != "" {
		t.Fatal(e)
	}
	var list TaskListResult
	if e := call(t, cs, "task_list", map[string]any{"status": "blocked"}, &list); e != "" || len(list.Tasks) != 1 || list.Tasks[0].BlockedBy[0] != "t1" {
		t.Errorf("task_list blocked (a string) = %+v, %s", list, e)
	}
	if e := call(t, cs, "task_list", map[string]any{"status": "failed, blocked"}, &list); e != "" || len(list.Tasks) != 2 {
		t.Errorf("task_list \"failed, blocked\" = %+v, %s", list, e)
	}
	if e := call(t, cs, "task_list", map[string]any{"status": []string{"failed"}}, &list); e != "" || len(list.Tasks) != 1 {
		t.Errorf("task_list [failed] = %+v, %s", list, e)
	}
	if e := call(t, cs, "task_list", map[string]any{"status": 3}, nil); e == "" {
		t.Error("task_list with status 3 was taken")
	}
	if e := call(t, cs, "task_retry", map[string]any{"id": "t2"}, nil); !strings.Contains(e, "not failed") {
		t.Errorf("task_retry of a pending task = %q", e)
	}
	if e := call(t, cs, "task_retry", map[string]any{"id": "t1", "note": "URL fixed"}, &tk); e != "" || tk.Status != task.Pending || tk.LastError != "callback rejected" {
		t.Fatalf("task_retry = %+v, %s", tk, e)
	}
	if e := call(t, cs, "task_claim", map[string]any{"task_id": "t1"}, nil); e != "" {
		t.Fatal(e)
	}
	done := map[string]any{"id": "t1", "status": "completed", "outcome": "works", "outcome_detail": map[string]any{"packages": []string{"passport"}}}
	if e := call(t, cs, "task_update", done, &tk); e != "" || tk.OutcomeDetail.String() != `{"packages":["passport"]}` || tk.Attempts != 2 {
		t.Fatalf("task_update completed = %+v, %s", tk, e)
	}
	var c task.Context
	if e := call(t, cs, "task_context", map[string]any{"id": "t1"}, &c); e != "" || len(c.Checkpoints) != 1 ||
		c.Checkpoints[0].Detail.String() != `{"n":1.5,"reason":"API-first"}` || c.Checkpoints[0].Type != "decision" ||
		c.Task.OutcomeDetail.String() != `{"packages":["passport"]}` {
		t.Errorf("task_context = %+v, %s", c, e)
	}
}

// TestDocumentDelete: document_delete removes a document, refuses a stale
// version, and says when there is none.
func TestDocumentDelete(t *testing.T) {
	_, cs := connect(t, tree.Root(t.TempDir()))
	var w DocWriteResult
	if e := call(t, cs, "document_create", map[string]any{"file": "a.md", "content": "x"}, &w); e != "" {
		t.Fatal(e)
	}
	if e := call(t, cs, "document_delete", map[string]any{"file": "a.md", "if_version": "nope"}, nil); e == "" {
		t.Error("a delete at a stale version was done")
	}
	var d DocDeleteResult
	if e := call(t, cs, "document_delete", map[string]any{"file": "a.md", "if_version": w.Version}, &d); e != "" || !d.Deleted {
		t.Fatalf("document_delete = %+v, %s", d, e)
	}
	if e := call(t, cs, "document_delete", map[string]any{"file": "a.md"}, nil); !strings.Contains(e, "no document a.md") {
		t.Errorf("second delete = %q", e)
	}
}

// TestSeedToolsViaBridge runs them through a bridge: the retry and the
// details are events the remote agent signs.
func TestSeedToolsViaBridge(t *testing.T) {
	viaBridge = true
	t.Cleanup(func() { viaBridge = false })
	t.Run("tasks", TestSeedTaskTools)
	t.Run("document_delete", TestDocumentDelete)
}

// FuzzStatusList: task_list's status, a string or a list, decodes to
// trimmed, non-empty states, or fails.
func FuzzStatusList(f *testing.F) {
	for _, s := range []string{`"ready"`, `"failed, blocked"`, `["a","b"]`, `""`, `","`, `3`, `null`, `[1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var l StatusList
		if err := l.UnmarshalJSON(data); err != nil {
			return
		}
		var one string
		if json.Unmarshal(data, &one) == nil {
			for _, s := range l {
				if s == "" || s != strings.TrimSpace(s) || strings.Contains(s, ",") {
					t.Fatalf("%s: state %q", data, s)
				}
			}
		}
	})
}
