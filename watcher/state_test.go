package watcher_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestStateRecovery: watch.json damaged between runs (scenario 11) is
// detected, logged and kept aside; the next start rescans the recovery
// window and answers exactly what has no reply: not what it answered, not
// what someone answered for it, not what is older than the window.
func TestStateRecovery(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"emptied", func([]byte) []byte { return nil }},
		{"bit flipped", func(b []byte) []byte {
			// A flip that keeps the JSON valid: only the sum catches it.
			i := bytes.Index(b, []byte(`"saved": "`)) + len(`"saved": "`) + 3
			b = bytes.Clone(b)
			b[i] ^= 1 // a digit of the year
			return b
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			r := &fakeRunner{}
			cfg := config(root, r)
			cfg.RecoveryWindow = time.Hour

			h1 := start(t, cfg)
			answered := send(t, root, agent, "answered before")
			waitReplies(t, root, answered.ID)
			waitSettled(t, root, agent)
			if err := h1.stop(); err != nil {
				t.Fatal(err)
			}

			// While down: a message answered by someone else for the agent,
			// one with no answer, and one older than the window.
			elsewhere := send(t, root, agent, "answered by another host")
			post(t, root, channel.Message{From: agent, To: "alice", Content: channel.Content{Text: "done"},
				Metadata: channel.Metadata{InReplyTo: elsewhere.ID}})
			down := send(t, root, agent, "arrived while down")
			old := channel.Message{SessionID: chName, From: "alice", To: agent, Content: channel.Content{Text: "too old"}}
			past := func() time.Time { return time.Now().Add(-2 * time.Hour) }
			if err := (&channel.Writer{Root: root, Now: past}).Post(&old); err != nil {
				t.Fatal(err)
			}

			path := filepath.Join(root.State(agent), "watch.json")
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			bad := tt.damage(good)
			if err := os.WriteFile(path, bad, 0o644); err != nil {
				t.Fatal(err)
			}

			h2 := start(t, cfg)
			waitReplies(t, root, down.ID)
			waitSettled(t, root, agent)
			live := send(t, root, agent, "after the recovery")
			waitReplies(t, root, live.ID)
			waitSettled(t, root, agent)
			h2.stop()

			if n := len(h2.logs.find("state unreadable; recovering: rescanning the channels")); n != 1 {
				t.Errorf("%d log lines about the damaged state, want 1", n)
			}
			aside, _ := filepath.Glob(path + ".corrupt-*")
			if len(aside) != 1 {
				t.Fatalf("corrupt copies: %q, want 1", aside)
			}
			if got, _ := os.ReadFile(aside[0]); !bytes.Equal(got, bad) {
				t.Errorf("the copy kept aside differs from the damaged file")
			}
			msgs := messages(t, root)
			checkOnce(t, root, r, answered, down, live)
			for _, m := range []channel.Message{elsewhere, old} {
				if runs := len(r.callsFor(m.ID)); runs != 0 {
					t.Errorf("%q: %d CLI runs, want 0", m.Content.Text, runs)
				}
			}
			if n := len(repliesTo(msgs, elsewhere.ID)); n != 1 {
				t.Errorf("%q: %d replies, want 1", elsewhere.Content.Text, n)
			}
			if n := len(repliesTo(msgs, old.ID)); n != 0 {
				t.Errorf("%q (older than the window): %d replies, want 0", old.Content.Text, n)
			}
			// The next start resumes normally from the rewritten state.
			h3 := start(t, cfg)
			h3.stop()
			if !slices.ContainsFunc(h3.logs.find("watching"), func(r map[string]any) bool { return r["resumed"] == true && r["recovering"] == false }) {
				t.Errorf("the start after the recovery did not resume from its state")
			}
		})
	}
}

// TestStateOldFormat: watch.json and sessions.json written before files
// were sealed still load (resume, and the CLI session is resumed); the
// next save seals them.
func TestStateOldFormat(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
		return modelcli.Response{Text: "reply to " + c.msgID(), Session: "sess-1"}, nil
	}}
	cfg := config(root, r)
	h1 := start(t, cfg)
	before := send(t, root, agent, "before")
	waitReplies(t, root, before.ID)
	waitSettled(t, root, agent)
	h1.stop()

	// Rewrite both files as an earlier collab wrote them: the bare payload.
	for _, name := range []string{"watch.json", "sessions.json"} {
		path := filepath.Join(root.State(agent), name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var sealed struct {
			SHA256 string          `json:"sha256"`
			State  json.RawMessage `json:"state"`
		}
		if err := json.Unmarshal(data, &sealed); err != nil || sealed.SHA256 == "" {
			t.Fatalf("%s is not sealed: %v\n%s", name, err, data)
		}
		if err := os.WriteFile(path, sealed.State, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	down := send(t, root, agent, "while down")
	h2 := start(t, cfg)
	waitReplies(t, root, down.ID)
	waitSettled(t, root, agent)
	h2.stop()

	if !slices.ContainsFunc(h2.logs.find("watching"), func(r map[string]any) bool { return r["resumed"] == true && r["recovering"] == false }) {
		t.Errorf("the old state file was not resumed from")
	}
	if n := len(h2.logs.find("sessions unreadable; starting new ones")); n != 0 {
		t.Errorf("the old sessions file was refused")
	}
	checkOnce(t, root, r, before, down)
	if c := r.callsFor(down.ID); len(c) == 1 && c[0].Req.Session != "sess-1" {
		t.Errorf("session = %q, want sess-1 from the old sessions file", c[0].Req.Session)
	}
	for _, name := range []string{"watch.json", "sessions.json"} {
		data, err := os.ReadFile(filepath.Join(root.State(agent), name))
		if err != nil || !bytes.Contains(data, []byte(`"sha256"`)) {
			t.Errorf("%s is not sealed after a run: %v\n%s", name, err, data)
		}
	}
}

// TestSessionsCorrupt: a damaged sessions.json is kept aside and the
// watcher starts new sessions.
func TestSessionsCorrupt(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	if err := os.MkdirAll(root.State(agent), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root.State(agent), "sessions.json")
	if err := os.WriteFile(path, []byte(`{"version": 2, "sha256": "00", "state": {"general": {"cli": "command", "id": "s-9"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &fakeRunner{}
	h := start(t, config(root, r))
	m := send(t, root, agent, "hello")
	waitReplies(t, root, m.ID)
	h.stop()
	if n := len(h.logs.find("sessions unreadable; starting new ones")); n != 1 {
		t.Errorf("%d log lines about the damaged sessions, want 1", n)
	}
	if aside, _ := filepath.Glob(path + ".corrupt-*"); len(aside) != 1 {
		t.Errorf("corrupt copies: %q, want 1", aside)
	}
	if c := r.callsFor(m.ID); len(c) != 1 || c[0].Req.Session != "" {
		t.Errorf("calls = %+v, want one with no session to resume", c)
	}
}
