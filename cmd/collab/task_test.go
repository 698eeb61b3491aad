package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/workspace/task"
)

func TestTaskCommands(t *testing.T) {
	env := map[string]string{"COLLAB_ROOT": newTree(t), "COLLAB_CHANNEL": "dev"}
	steps := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout string // contained
		stderr string // contained
	}{
		{"add", "", []string{"add", "--agent", "lead", "--title", "parser"}, 0, "t1\n", ""},
		{"add with body from stdin", "fuzz it\n", []string{"add", "--agent", "lead", "--title", "tests", "--depends", "t1", "--body", "-"}, 0, "t2\n", ""},
		{"add unknown dependency", "", []string{"add", "--agent", "lead", "--title", "x", "--depends", "t9"}, 1, "", "no such task"},
		{"add bad dependency", "", []string{"add", "--agent", "lead", "--title", "x", "--depends", "../x"}, 2, "", "not a task id"},
		{"add without title", "", []string{"add", "--agent", "lead"}, 2, "", "title is empty"},
		{"add without agent", "", []string{"add", "--title", "x"}, 2, "", "no agent"},
		{"bad channel", "", []string{"list", "--channel", "../etc"}, 2, "", "invalid name"},
		{"bad id", "", []string{"claim", "../t1", "--agent", "a"}, 2, "", "not a task id"},
		{"unknown subcommand", "", []string{"frob"}, 2, "", "unknown command"},
		{"list", "", []string{"list"}, 0, "t2  pending, waits for t1", ""},
		{"claim blocked", "", []string{"claim", "t2", "--agent", "codex"}, 1, "", "waits for t1"},
		{"next", "", []string{"next", "--agent", "codex"}, 0, "t1 claimed by codex", ""},
		{"claim held", "", []string{"claim", "t1", "--agent", "gemini"}, 4, "", "task t1 is claimed by codex"},
		{"next none ready", "", []string{"next", "--agent", "gemini"}, 3, "", "no ready task"},
		{"checkpoint by another", "", []string{"checkpoint", "t1", "--agent", "gemini", "--summary", "x"}, 1, "", "claimed by codex"},
		{"checkpoint", "", []string{"checkpoint", "t1", "--agent", "codex", "--summary", "lexer done"}, 0, "t1: checkpoint (progress) recorded", ""},
		{"done", "", []string{"done", "t1", "--agent", "codex", "--outcome", "merged"}, 0, "t1 done", ""},
		{"list ready", "", []string{"list", "--status", "ready"}, 0, "t2  ready", ""},
		{"claim", "", []string{"claim", "t2", "--agent", "gemini"}, 0, "t2 claimed by gemini", ""},
		{"fail", "", []string{"fail", "t2", "--agent", "gemini", "--error", "flaky"}, 0, "t2 failed", ""},
		{"show", "", []string{"show", "t1"}, 0, "checkpoint codex@", ""},
		{"list bad status", "", []string{"list", "--status", "nope"}, 2, "", "not one of"},
	}
	for _, s := range steps {
		r := runCollab(t, env, s.stdin, append([]string{"task"}, s.args...)...)
		if r.code != s.code || !strings.Contains(r.stdout, s.stdout) || !strings.Contains(r.stderr, s.stderr) {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				s.name, r.code, r.stdout, r.stderr, s.code, s.stdout, s.stderr)
		}
	}

	r := runCollab(t, env, "", "task", "list", "--json")
	var tasks []task.Task
	if err := json.Unmarshal([]byte(r.stdout), &tasks); err != nil || len(tasks) != 2 {
		t.Fatalf("list --json = %q (%v); want two tasks", r.stdout, err)
	}
	if tasks[0].Status != task.Done || tasks[0].Outcome != "merged" || tasks[1].Error != "flaky" || tasks[1].Body != "fuzz it" {
		t.Errorf("list --json = %+v", tasks)
	}
	r = runCollab(t, env, "", "task", "list", "--json", "--status", "claimed")
	if strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("empty list --json = %q, want []", r.stdout)
	}
	r = runCollab(t, env, "", "task", "show", "t1", "--json")
	var shown struct {
		task.Task
		History []task.Event `json:"history"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || len(shown.History) != 3 || shown.History[2].Outcome != "merged" {
		t.Errorf("show --json = %q (%v); want three events", r.stdout, err)
	}
}
