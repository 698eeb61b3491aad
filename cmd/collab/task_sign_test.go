package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestTaskSigned: codex, who has a key, signs its task events with --key
// and cannot act without it; an event forged in its name is marked and
// counts for nothing, so another agent may claim the task.
func TestTaskSigned(t *testing.T) {
	root := tree.Root(newTree(t))
	env := map[string]string{"COLLAB_ROOT": string(root), "COLLAB_CHANNEL": "dev", "XDG_CONFIG_HOME": t.TempDir()}
	_, key := trustKeyFile(t, root, "codex")
	for _, s := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"add", []string{"add", "--agent", "lead", "--title", "parser"}, 0, "t1", ""},
		{"add", []string{"add", "--agent", "lead", "--title", "lexer"}, 0, "t2", ""},
		{"claim without key", []string{"claim", "t1", "--agent", "codex"}, 4, "", "pass --key"},
		{"claim with key", []string{"claim", "t1", "--agent", "codex", "--key", key}, 0, "t1 claimed by codex", ""},
		{"claimed", []string{"claim", "t1", "--agent", "gemini"}, 4, "", "claimed by codex"},
	} {
		r := runCollab(t, env, "", append([]string{"task"}, s.args...)...)
		if r.code != s.code || !strings.Contains(r.stdout, s.stdout) || !strings.Contains(r.stderr, s.stderr) {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				s.name, r.code, r.stdout, r.stderr, s.code, s.stdout, s.stderr)
		}
	}
	// A forged claim of t2 in codex's name, written as a file.
	dir := filepath.Join(root.Tasks("dev"), "t2")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	forged := `{"seq":1,"event":"claimed","status":"claimed","owner":"codex","agent":"codex","time":"2026-01-11T16:00:00Z"}`
	if err := os.WriteFile(filepath.Join(dir, "000001.json"), []byte(forged), 0o666); err != nil {
		t.Fatal(err)
	}
	r := runCollab(t, env, "", "task", "list")
	if !strings.Contains(r.stdout, "t2  ready [1 unverified]") || strings.Contains(r.stdout, "t1  claimed by codex [") {
		t.Errorf("list:\n%s\nwant t2 ready and marked, t1 claimed and not marked", r.stdout)
	}
	r = runCollab(t, env, "", "task", "show", "t2")
	if !strings.Contains(r.stdout, "[unsigned: ignored]") {
		t.Errorf("show t2:\n%s\nwant the forged claim marked", r.stdout)
	}
	r = runCollab(t, env, "", "task", "show", "t1", "--json")
	var shown struct {
		History []struct {
			Verdict string `json:"verdict"`
		} `json:"history"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || len(shown.History) != 1 || shown.History[0].Verdict != "verified" {
		t.Errorf("show t1 --json: %s (%v); want one verified event", r.stdout, err)
	}
	if r := runCollab(t, env, "", "task", "claim", "t2", "--agent", "gemini"); r.code != 0 {
		t.Errorf("gemini's claim of t2 after a forged claim: exit %d, %s", r.code, r.stderr)
	}
}

// TestJobsKillSigned: jobs kill signs the request with the requester's
// key (--key), so it verifies as alice's (who asked for the job).
func TestJobsKillSigned(t *testing.T) {
	f := newJobsFixture(t)
	_, key := trustKeyFile(t, f.root, "alice")
	env := map[string]string{"COLLAB_ROOT": string(f.root), "COLLAB_AGENT": "alice", "COLLAB_KEY": key}
	if r := runCollab(t, env, "", "jobs", "kill", f.running.ID); r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	k, err := jobs.ReadKill(f.root, "claude", f.running.ID)
	if err != nil {
		t.Fatal(err)
	}
	v := signing.NewVerifier(keyring.In(f.root, ""))
	if got := k.Verify(v, "claude", f.running.ID); got != signing.Verified || k.By != "alice" {
		t.Errorf("kill request by %q: %v, want alice's, verified", k.By, got)
	}
}
