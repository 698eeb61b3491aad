package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/task"
)

// TestTaskCheckpointTypes: checkpoint takes --type (default progress; an
// unknown type is a usage error that records nothing), --files and its
// text as --text, --summary, words or "-"; a keyed agent's checkpoint is
// signed over them and verifies.
func TestTaskCheckpointTypes(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev", "XDG_CONFIG_HOME": t.TempDir()}
	_, key := trustKeyFile(t, tree.Root(root), "codex")
	steps := []struct {
		stdin string
		args  []string
		code  int
	}{
		{"", []string{"add", "--agent", "lead", "write", "the", "parser"}, 0},
		{"", []string{"claim", "t1", "--agent", "codex", "--key", key}, 0},
		{"", []string{"checkpoint", "t1", "--agent", "codex", "--key", key, "--type", "milestone", "x"}, exitUsage},
		{"", []string{"checkpoint", "t1", "--agent", "codex", "--key", key, "--files", "a\x01b", "x"}, exitUsage},
		{"", []string{"checkpoint", "t1", "--agent", "codex", "--key", key, "--type", "plan", "--text", "lexer first"}, 0},
		{"", []string{"checkpoint", "t1", "--agent", "codex", "--key", key, "--files", "lex.go,lex_test.go", "lexer", "done"}, 0},
		{"JWT, stateless\n", []string{"checkpoint", "t1", "--agent", "codex", "--key", key, "--type", "decision", "-"}, 0},
		{"", []string{"checkpoint", "t1", "--agent", "codex", "--key", key, "--type", "error", "--summary", "yacc missing"}, 0},
	}
	for _, s := range steps {
		r := runCollab(t, env, s.stdin, append([]string{"task"}, s.args...)...)
		if r.code != s.code {
			t.Fatalf("%q: exit %d (%s), want %d", s.args, r.code, r.stderr, s.code)
		}
	}
	r := runCollab(t, env, "", "task", "show", "t1", "--json")
	var shown struct {
		History []struct {
			Event   string   `json:"event"`
			Type    string   `json:"type"`
			Summary string   `json:"summary"`
			Files   []string `json:"files"`
			Verdict string   `json:"verdict"`
		} `json:"history"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || len(shown.History) != 5 {
		t.Fatalf("show --json: %s (%v); want 5 events", r.stdout, err)
	}
	want := []struct{ typ, text string }{{"plan", "lexer first"}, {"progress", "lexer done"}, {"decision", "JWT, stateless"}, {"error", "yacc missing"}}
	for i, w := range want {
		e := shown.History[i+1]
		if e.Event != "checkpoint" || e.Type != w.typ || e.Summary != w.text || e.Verdict != "verified" {
			t.Errorf("event %d: %+v, want a verified %s checkpoint %q", i+2, e, w.typ, w.text)
		}
	}
	if got := shown.History[2].Files; !slices.Equal(got, []string{"lex.go", "lex_test.go"}) {
		t.Errorf("files %q", got)
	}
	if out := runCollab(t, env, "", "task", "show", "t1").stdout; !strings.Contains(out, "(decision): JWT, stateless") || !strings.Contains(out, "[files: lex.go, lex_test.go]") {
		t.Errorf("show:\n%s\nwant types and files", out)
	}
}

// TestTaskContext: task context prints the task, its newest checkpoints
// within --max-tokens (saying how many older ones it left out) and its
// dependencies' outcomes; --json gives the same as JSON.
func TestTaskContext(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev", "COLLAB_AGENT": "codex"}
	run := func(args ...string) string {
		t.Helper()
		r := runCollab(t, env, "", append([]string{"task"}, args...)...)
		if r.code != 0 {
			t.Fatalf("%q: exit %d: %s", args, r.code, r.stderr)
		}
		return r.stdout
	}
	run("add", "write the parser")
	run("add", "--depends", "t1", "--body", "fuzz the parser for an hour", "fuzz", "it")
	run("claim", "t1")
	run("done", "t1", "merged", "as", "3f2c1a")
	run("claim", "t2")
	for i := 1; i <= 30; i++ {
		run("checkpoint", "t2", "--files", "fuzz.go", "round "+strconv.Itoa(i)+" "+strings.Repeat("z", 100))
	}
	out := run("context", "t2", "--max-tokens", "400")
	for _, w := range []string{"# Task t2: fuzz it", "state: claimed by codex", "fuzz the parser for an hour", "- t1 (done): write the parser", "outcome: merged as 3f2c1a", "older checkpoints left out to fit 400 tokens", "round 30 "} {
		if !strings.Contains(out, w) {
			t.Errorf("context lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "round 1 ") || task.Tokens(out) > 400 {
		t.Errorf("context not cut to 400 tokens (%d):\n%s", task.Tokens(out), out)
	}
	var c task.Context
	if err := json.Unmarshal([]byte(run("context", "t2", "--json")), &c); err != nil {
		t.Fatal(err)
	}
	if c.MaxTokens != 8000 || c.Task.ID != "t2" || len(c.Dependencies) != 1 || c.Dependencies[0].Outcome != "merged as 3f2c1a" || len(c.Checkpoints) != 30 || c.Cut {
		t.Errorf("context --json: %+v", c)
	}
	for _, args := range [][]string{{"context"}, {"context", "t2", "--max-tokens", "0"}, {"context", "t2", "extra"}} {
		if r := runCollab(t, env, "", append([]string{"task"}, args...)...); r.code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, r.code, exitUsage)
		}
	}
}
