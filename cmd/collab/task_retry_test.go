package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/workspace/task"
)

// TestTaskRetryLifecycle: seed 003's lifecycle at the command line: a
// task whose dependency failed is shown blocked by it (list, show,
// JSON), the failed task is retried by someone else, claimed again and
// finished with an outcome detail; checkpoints confirm what was recorded
// and carry a detail that context shows.
func TestTaskRetryLifecycle(t *testing.T) {
	env := map[string]string{"COLLAB_ROOT": newTree(t), "COLLAB_CHANNEL": "dev"}
	detail := filepath.Join(t.TempDir(), "outcome.json")
	if err := os.WriteFile(detail, []byte(`{"files_created": ["src/auth.ts"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		args   []string
		code   int
		stdout string // contained
		stderr string // contained
	}{
		{"add", []string{"add", "--agent", "lead", "--title", "oauth"}, 0, "t1\n", ""},
		{"add dependent", []string{"add", "--agent", "lead", "--title", "login page", "--depends", "t1"}, 0, "t2\n", ""},
		{"retry pending", []string{"retry", "t1", "--agent", "lead"}, 1, "", "not failed"},
		{"claim", []string{"claim", "t1", "--agent", "w3"}, 0, "t1 claimed by w3", ""},
		{"bad detail", []string{"checkpoint", "t1", "--agent", "w3", "--detail", "[1]", "x"}, 2, "", "not a JSON object"},
		{"checkpoint", []string{"checkpoint", "t1", "--agent", "w3", "--type", "decision", "--detail", `{"reason":"API-first"}`, "JWT over cookies"}, 0,
			"t1: checkpoint (decision) recorded", ""},
		{"fail", []string{"fail", "t1", "--agent", "w3", "--error", "callback URL rejected"}, 0, "t1 failed", ""},
		{"list blocked", []string{"list"}, 0, "t2  pending, blocked by failed t1", ""},
		{"list --status blocked", []string{"list", "--status", "blocked"}, 0, "t2", ""},
		{"show blocked", []string{"show", "t2"}, 0, "state:   pending, blocked by failed t1", ""},
		{"claim blocked", []string{"claim", "t2", "--agent", "w4"}, 1, "", "blocked by failed t1 (retry it first)"},
		{"retry", []string{"retry", "t1", "--agent", "lead", "--note", "the URL is fixed"}, 0, "t1 ready", ""},
		{"claim again", []string{"claim", "t1", "--agent", "w4"}, 0, "t1 claimed by w4", ""},
		{"done with detail", []string{"done", "t1", "--agent", "w4", "--outcome", "OAuth works", "--detail-file", detail}, 0, "t1 done", ""},
		{"context", []string{"context", "t1"}, 0, "  detail: {\"reason\":\"API-first\"}", ""},
		{"show", []string{"show", "t1"}, 0, "retried    lead@", ""},
		{"dependent ready", []string{"list", "--status", "ready"}, 0, "t2  ready", ""},
	}
	for _, s := range steps {
		r := runCollab(t, env, "", append([]string{"task"}, s.args...)...)
		if r.code != s.code || !strings.Contains(r.stdout, s.stdout) || !strings.Contains(r.stderr, s.stderr) {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				s.name, r.code, r.stdout, r.stderr, s.code, s.stdout, s.stderr)
		}
	}
	r := runCollab(t, env, "", "task", "show", "t1", "--json")
	var shown struct {
		task.Task
		History []task.Event `json:"history"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil {
		t.Fatalf("show --json: %v\n%s", err, r.stdout)
	}
	if shown.Attempts != 2 || shown.LastError != "callback URL rejected" || shown.OutcomeDetail.String() != `{"files_created":["src/auth.ts"]}` ||
		len(shown.History) != 6 || shown.History[1].Detail.String() != `{"reason":"API-first"}` {
		t.Errorf("show --json = %s", r.stdout)
	}
	r = runCollab(t, env, "", "task", "context", "t1")
	if !strings.Contains(r.stdout, "## Outcome\nOAuth works\ndetail: {\"files_created\":[\"src/auth.ts\"]}") {
		t.Errorf("context = %s", r.stdout)
	}
}

// TestTaskBlockedJSON: list --json names the failed dependency.
func TestTaskBlockedJSON(t *testing.T) {
	env := map[string]string{"COLLAB_ROOT": newTree(t), "COLLAB_CHANNEL": "dev"}
	for _, args := range [][]string{
		{"add", "--agent", "lead", "a"}, {"add", "--agent", "lead", "--depends", "t1", "b"},
		{"claim", "t1", "--agent", "w"}, {"fail", "t1", "--agent", "w", "no"},
	} {
		if r := runCollab(t, env, "", append([]string{"task"}, args...)...); r.code != 0 {
			t.Fatalf("%q: %d %s", args, r.code, r.stderr)
		}
	}
	// A refused claim prints no task, only why.
	if r := runCollab(t, env, "", "task", "claim", "t2", "--agent", "x"); r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "blocked by failed t1") {
		t.Errorf("claim of a blocked task: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r := runCollab(t, env, "", "task", "list", "--json")
	var tasks []task.Task
	if err := json.Unmarshal([]byte(r.stdout), &tasks); err != nil || len(tasks) != 2 || len(tasks[1].BlockedBy) != 1 || tasks[1].BlockedBy[0] != "t1" {
		t.Errorf("list --json = %s (%v)", r.stdout, err)
	}
}
