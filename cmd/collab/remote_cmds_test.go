package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/workspace/documents"
)

// TestRemoteDoc: doc --remote with no mount changes the documents on the
// mount; a stale --if-version is refused (exit 4) with the current
// version; with the bridge down nothing is written.
func TestRemoteDoc(t *testing.T) {
	s := newRemoteSetup(t)
	path := filepath.Join(s.root.Docs("dev"), "plan.md")
	r := runCollab(t, s.env, "", "doc", "write", "--channel", "dev", "plan.md", "while down")
	if r.code != exitFailure || !strings.Contains(r.stderr, "nothing was written") {
		t.Fatalf("doc write with the bridge down: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("written while the bridge is down: %v", err)
	}
	startBridge(t, s.root, s.url)
	r = runCollab(t, s.env, "", "doc", "create", "--channel", "dev", "plan.md", "first plan")
	v1 := strings.TrimSpace(r.stdout)
	if data, _ := os.ReadFile(path); r.code != 0 || string(data) != "first plan\n" || v1 != documents.Version("first plan\n") {
		t.Fatalf("doc create --remote: exit %d, %q %q; on the mount %q", r.code, r.stdout, r.stderr, data)
	}
	// A mounted host changes it meanwhile.
	if r := runCollab(t, s.mounted, "", "doc", "write", "--channel", "dev", "plan.md", "mounted plan"); r.code != 0 {
		t.Fatalf("doc write on the mount: %d %s", r.code, r.stderr)
	}
	r = runCollab(t, s.env, "", "doc", "write", "--channel", "dev", "--if-version", v1, "plan.md", "stale plan")
	if r.code != exitRefused || !strings.Contains(r.stderr, documents.Version("mounted plan\n")) {
		t.Fatalf("stale doc write --remote: exit %d, %q; want 4 and the current version", r.code, r.stderr)
	}
	if r := runCollab(t, s.env, "", "doc", "create", "--channel", "dev", "plan.md", "again"); r.code != exitRefused {
		t.Errorf("doc create over a file: exit %d, %q", r.code, r.stderr)
	}
	r = runCollab(t, s.env, "", "doc", "read", "--channel", "dev", "plan.md", "--json")
	var d documents.Doc
	if err := json.Unmarshal([]byte(r.stdout), &d); r.code != 0 || err != nil || d.Content != "mounted plan\n" {
		t.Fatalf("doc read --remote: exit %d, %q %v", r.code, r.stdout, err)
	}
	r = runCollab(t, s.env, "", "doc", "write", "--channel", "dev", "--if-version", d.Version, "plan.md", "remote plan")
	if data, _ := os.ReadFile(path); r.code != 0 || string(data) != "remote plan\n" {
		t.Fatalf("doc write --if-version --remote: exit %d, %q; on the mount %q", r.code, r.stderr, data)
	}
	if r := runCollab(t, s.env, "", "doc", "list", "--channel", "dev"); r.code != 0 || !strings.Contains(r.stdout, "plan.md") {
		t.Errorf("doc list --remote: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	big := strings.Repeat("x", 1<<20+100) // over the server's max_payload
	if r := runCollab(t, s.env, big, "doc", "write", "--channel", "dev", "big.md", "-"); r.code != exitFailure || !strings.Contains(r.stderr, "max_payload") {
		t.Errorf("doc write of %d bytes --remote: exit %d, %q", len(big), r.code, r.stderr)
	}
	if r := runCollab(t, s.env, "", "doc", "read", "--channel", "dev", "gone.md"); r.code != exitFailure || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("doc read of a missing file: exit %d, %q", r.code, r.stderr)
	}
	s.noRootTouched(t)
}

// TestRemoteTask: task --remote with no mount claims, checkpoints and
// finishes a task added on the mount, each event signed by the remote
// agent and verified there; a task claimed by another agent is refused
// (exit 4) both ways.
func TestRemoteTask(t *testing.T) {
	s := newRemoteSetup(t)
	startBridge(t, s.root, s.url)
	mounted := func(args ...string) result {
		return runCollab(t, s.mounted, "", append(args, "--agent", "m", "--channel", "dev")...)
	}
	for _, title := range []string{"parse", "lex"} {
		if r := mounted("task", "add", title); r.code != 0 {
			t.Fatalf("task add: %d %s", r.code, r.stderr)
		}
	}
	r := runCollab(t, s.env, "", "task", "list", "--channel", "dev")
	if r.code != 0 || !strings.Contains(r.stdout, "parse") || !strings.Contains(r.stdout, "lex") {
		t.Fatalf("task list --remote: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runCollab(t, s.env, "", "task", "claim", "--channel", "dev", "t1"); r.code != 0 || !strings.Contains(r.stdout, "claimed by rem") {
		t.Fatalf("task claim --remote: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if r := mounted("task", "claim", "t1"); r.code != exitRefused {
		t.Fatalf("claim on the mount of rem's task: exit %d, %q", r.code, r.stderr)
	}
	if r := mounted("task", "claim", "t2"); r.code != 0 {
		t.Fatalf("claim on the mount: exit %d, %q", r.code, r.stderr)
	}
	if r := runCollab(t, s.env, "", "task", "claim", "--channel", "dev", "t2"); r.code != exitRefused || !strings.Contains(r.stderr, "claimed by m") {
		t.Fatalf("task claim --remote of m's task: exit %d, %q", r.code, r.stderr)
	}
	if r := runCollab(t, s.env, "", "task", "checkpoint", "--channel", "dev", "t2", "not mine"); r.code == 0 {
		t.Fatalf("checkpoint --remote on m's task: exit 0")
	}
	for _, args := range [][]string{{"checkpoint", "t1", "--type", "decision", "--files", "a.go", "half way"}, {"done", "t1", "parsed"}} {
		if r := runCollab(t, s.env, "", append([]string{"task", args[0], "--channel", "dev"}, args[1:]...)...); r.code != 0 {
			t.Fatalf("task %s --remote: exit %d, %q", args[0], r.code, r.stderr)
		}
	}
	r = mounted("task", "show", "t1", "--json")
	var shown struct {
		Status  string `json:"status"`
		History []struct {
			Agent   string `json:"agent"`
			Event   string `json:"event"`
			Verdict string `json:"verdict"`
			Type    string `json:"type"`
		} `json:"history"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); r.code != 0 || err != nil || shown.Status != "done" || len(shown.History) != 3 {
		t.Fatalf("task show on the mount: exit %d, %q %v", r.code, r.stdout, err)
	}
	for _, h := range shown.History {
		if h.Agent != "rem" || h.Verdict != "verified" {
			t.Errorf("event %s on the mount: by %s, %s; want rem's, verified", h.Event, h.Agent, h.Verdict)
		}
	}
	if shown.History[1].Type != "decision" {
		t.Errorf("checkpoint type %q", shown.History[1].Type)
	}
	r = runCollab(t, s.env, "", "task", "show", "--channel", "dev", "t1")
	if r.code != 0 || !strings.Contains(r.stdout, "parsed") {
		t.Errorf("task show --remote: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, s.env, "", "task", "context", "--channel", "dev", "t1", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"outcome": "parsed"`) {
		t.Errorf("task context --remote: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	s.noRootTouched(t)
}

// TestRemoteInbox: inbox --remote shows the messages for the agent read
// through the bridge and keeps its cursor in this host's state dir, never
// the mount's; --peek does not move it; ack --remote does.
func TestRemoteInbox(t *testing.T) {
	s := newRemoteSetup(t)
	startBridge(t, s.root, s.url)
	send := func(to, text string) string {
		r := runCollab(t, s.mounted, "", "send", "--agent", "m", "--channel", "dev", "--to", to, text)
		if r.code != 0 {
			t.Fatalf("send: %d %s", r.code, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	send("rem", "first for rem")
	send("other", "not for rem")
	send("rem", "second for rem")
	if r := runCollab(t, s.env, "", "inbox"); r.code != exitUsage {
		t.Errorf("inbox --remote without --channel: exit %d", r.code)
	}
	r := runCollab(t, s.env, "", "inbox", "--channel", "dev", "--peek")
	if r.code != 0 || !strings.Contains(r.stdout, "first for rem") || !strings.Contains(r.stdout, "second for rem") || strings.Contains(r.stdout, "not for rem") {
		t.Fatalf("inbox --peek --remote: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(s.state, "inbox", "dev.json")); !os.IsNotExist(err) {
		t.Fatalf("--peek wrote a cursor: %v", err)
	}
	if r := runCollab(t, s.env, "", "inbox", "--channel", "dev"); r.code != 0 || strings.Count(r.stdout, "for rem") != 2 {
		t.Fatalf("inbox --remote: exit %d, %q", r.code, r.stdout)
	}
	if r := runCollab(t, s.env, "", "inbox", "--channel", "dev"); r.code != 0 || r.stdout != "" {
		t.Fatalf("inbox --remote again: exit %d, %q; want nothing new", r.code, r.stdout)
	}
	id := send("rem", "third for rem")
	send("rem", "fourth for rem")
	if r := runCollab(t, s.env, "", "inbox", "ack", "--channel", "dev", "--until", id); r.code != 0 || !strings.Contains(r.stdout, "acknowledged 1 message(s)") {
		t.Fatalf("inbox ack --remote: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, s.env, "", "inbox", "--channel", "dev", "--json")
	if r.code != 0 || strings.Contains(r.stdout, "third") || !strings.Contains(r.stdout, "fourth for rem") {
		t.Fatalf("inbox --remote after ack: exit %d, %q", r.code, r.stdout)
	}
	if _, err := os.Stat(s.root.Inbox("rem")); !os.IsNotExist(err) {
		t.Errorf("the mount's inbox state was written: %v", err)
	}
	s.noRootTouched(t)
}
