package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAgentRegister: an agent without a watcher registers, who lists it
// with its role, and unregistering removes it.
func TestAgentRegister(t *testing.T) {
	env := map[string]string{"COLLAB_ROOT": newTree(t), "XDG_CONFIG_HOME": t.TempDir()}
	for _, s := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"agent"}, 2, "", "Usage"},
		{[]string{"agent", "register", "w1"}, 2, "", "runtime is required"},
		{[]string{"agent", "register", "../w1", "--runtime", "x"}, 2, "", "invalid"},
		{[]string{"agent", "register", "w1", "--runtime", "claude_code", "--role", "reviewer", "--capabilities", "go,testing"}, 0,
			"w1 registered (reviewer, claude_code: go,testing)", ""},
		{[]string{"who"}, 0, "w1", ""},
		{[]string{"agent", "unregister", "w1"}, 0, "w1 unregistered", ""},
		{[]string{"agent", "unregister", "w1"}, 3, "", "not registered"},
	} {
		r := runCollab(t, env, "", s.args...)
		if r.code != s.code || !strings.Contains(r.stdout, s.stdout) || !strings.Contains(r.stderr, s.stderr) {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				s.args, r.code, r.stdout, r.stderr, s.code, s.stdout, s.stderr)
		}
	}
	r := runCollab(t, env, "", "agent", "register", "w2", "--runtime", "codex", "--json")
	var entry map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &entry); err != nil || entry["id"] != "w2" || entry["runtime"] != "codex" || entry["role"] != "worker" {
		t.Errorf("register --json = %q (%v)", r.stdout, err)
	}
	r = runCollab(t, env, "", "who", "--json")
	if !strings.Contains(r.stdout, `"agent": "w2"`) || !strings.Contains(r.stdout, `"role": "worker"`) {
		t.Errorf("who --json = %s", r.stdout)
	}
}
