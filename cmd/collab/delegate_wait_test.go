package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestDelegateNoWait: without --wait, delegate prints the session and
// returns once the agent is started, without waiting for its answer,
// which comes to the channel all the same; --timeout is --wait's.
func TestDelegateNoWait(t *testing.T) {
	d := newDelegateEnv(t)
	r := d.delegate(t, "--title", "no wait", "go on your own")
	if r.code != 0 {
		t.Fatalf("delegate: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "session ") || strings.Contains(r.stderr, "waiting for the answer") {
		t.Fatalf("delegate without --wait waited:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	_, prompt, ok := strings.Cut(strings.TrimSuffix(lines[0], ")"), "(prompt ")
	if !ok {
		t.Fatalf("no prompt id in %q", lines[0])
	}
	s := d.session(t, strings.TrimSuffix(strings.Fields(lines[0])[1], ":"))
	w := runCollab(t, d.env, "", "wait", "--channel", s.Channel, "--reply-to", prompt, "--timeout", "2m")
	if w.code != 0 || strings.TrimSpace(w.stdout) != "ok "+prompt {
		t.Fatalf("the answer: %+v", w)
	}

	if r := d.delegate(t, "--timeout", "1m", "work"); r.code != exitUsage || !strings.Contains(r.stderr, "--timeout needs --wait") {
		t.Errorf("--timeout without --wait: %+v", r)
	}
}

// TestDelegateJSONWait: delegate --json --wait prints one JSON document:
// the session (its id, worktree, branch, agent, channel, prompt) and the
// answer.
func TestDelegateJSONWait(t *testing.T) {
	d := newDelegateEnv(t)
	r := d.delegate(t, "--json", "--wait", "--timeout", "2m", "answer me")
	if r.code != 0 {
		t.Fatalf("delegate --json --wait: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var got struct {
		ID           string          `json:"id"`
		SessionID    string          `json:"sessionId"`
		Agent        string          `json:"agent"`
		Branch       string          `json:"branch"`
		Worktree     string          `json:"worktree"`
		WorktreePath string          `json:"worktreePath"`
		Channel      string          `json:"channel"`
		PromptID     string          `json:"prompt_id"`
		Answer       json.RawMessage `json:"answer"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if dec.More() {
		t.Fatalf("more than one JSON document:\n%s", r.stdout)
	}
	s := d.session(t, got.SessionID)
	if got.ID != s.ID || got.Agent != s.Agent || got.Branch != s.Branch || got.Worktree != s.Worktree ||
		got.WorktreePath != s.Worktree || got.Channel != s.Channel || got.PromptID == "" {
		t.Fatalf("session fields %+v, record %+v", got, s)
	}
	a, err := channel.Decode(got.Answer, "", s.Channel)
	if err != nil {
		t.Fatalf("answer: %v\n%s", err, got.Answer)
	}
	if a.From != s.Agent || a.Metadata.InReplyTo != got.PromptID || a.Content.Text != "ok "+got.PromptID {
		t.Fatalf("answer %+v", a)
	}
	if p, err := channel.Lookup(tree.Root(d.root), s.Channel, got.PromptID); err != nil || p.Content.Text != "answer me" {
		t.Fatalf("prompt %s: %+v, %v", got.PromptID, p, err)
	}
}
