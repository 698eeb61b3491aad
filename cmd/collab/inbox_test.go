package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
)

func inboxIDs(t *testing.T, out string) (ids []string, prio []string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var it struct {
			Channel  string          `json:"channel"`
			Priority string          `json:"priority"`
			Message  json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		m, err := channel.Decode(it.Message, "", it.Channel)
		if err != nil {
			t.Fatalf("message in %q: %v", line, err)
		}
		ids = append(ids, it.Channel+"/"+m.ID)
		prio = append(prio, it.Priority)
	}
	return ids, prio
}

func TestInbox(t *testing.T) {
	root := newTree(t)
	base := time.Date(2026, 1, 11, 16, 33, 0, 0, time.UTC)
	m1 := post(t, root, "dev", "claude", "codex", "please review\nthe \x1b[31mdiff", base)
	post(t, root, "dev", "codex", "claude", "mine", base.Add(time.Second))
	post(t, root, "dev", "claude", "all", "broadcast", base.Add(2*time.Second))
	m4 := post(t, root, "ops", "gemini", "all", "@codex @claude the build is blocked", base.Add(3*time.Second))
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_AGENT": "codex"}

	r := runCollab(t, env, "", "inbox", "--peek")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	want := "2026-01-11 16:33:03  #ops  gemini → all  " + m4.ID + "  [high]\n  @codex @claude the build is blocked\n\n" +
		"2026-01-11 16:33:00  #dev  claude → codex  " + m1.ID + "\n  please review\n  the \\x1b[31mdiff\n\n" // high first
	if r.stdout != want {
		t.Errorf("inbox:\n%s\nwant:\n%s", r.stdout, want)
	}
	r = runCollab(t, env, "", "inbox", "--peek", "--json", "--channel", "ops")
	ids, prio := inboxIDs(t, r.stdout)
	if strings.Join(ids, ",") != "ops/"+m4.ID || prio[0] != "high" {
		t.Errorf("peek ops = %v %v", ids, prio)
	}
	// Check acknowledges what it shows; every run is a fresh process, so
	// the cursor is read back from the tree each time.
	r = runCollab(t, env, "", "inbox", "--json", "--agent", "codex")
	if ids, _ := inboxIDs(t, r.stdout); strings.Join(ids, ",") != "ops/"+m4.ID+",dev/"+m1.ID {
		t.Errorf("check = %v (%s)", ids, r.stderr)
	}
	if r := runCollab(t, env, "", "inbox"); r.code != 0 || r.stdout != "" {
		t.Errorf("second check: exit %d, %q", r.code, r.stdout)
	}
	// claude's inbox is separate.
	r = runCollab(t, env, "", "inbox", "--agent", "claude", "--json")
	if ids, _ := inboxIDs(t, r.stdout); len(ids) != 2 {
		t.Errorf("claude's inbox = %v", ids)
	}
}

func TestInboxAck(t *testing.T) {
	root := newTree(t)
	base := time.Date(2026, 1, 11, 16, 33, 0, 0, time.UTC)
	post(t, root, "dev", "claude", "codex", "one", base)
	m2 := post(t, root, "dev", "claude", "codex", "two", base.Add(time.Minute))
	m3 := post(t, root, "dev", "claude", "codex", "three", base.Add(2*time.Minute))
	env := map[string]string{"COLLAB_ROOT": root}

	r := runCollab(t, env, "", "inbox", "ack", "--agent", "codex", "--until", m2.ID)
	if r.code != 0 || r.stdout != "acknowledged 2 message(s) up to "+m2.ID+"\n" {
		t.Fatalf("ack: exit %d, %q, %s", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, env, "", "inbox", "--agent", "codex", "--peek", "--json")
	if ids, _ := inboxIDs(t, r.stdout); strings.Join(ids, ",") != "dev/"+m3.ID {
		t.Errorf("after ack = %v", ids)
	}
	// A message from a writer whose clock is behind, arriving now, is named
	// before the acknowledged ones and is still unread.
	late := post(t, root, "dev", "gemini", "codex", "late", base.Add(30*time.Second))
	r = runCollab(t, env, "", "inbox", "--agent", "codex", "--json")
	if ids, _ := inboxIDs(t, r.stdout); strings.Join(ids, ",") != "dev/"+late.ID+",dev/"+m3.ID {
		t.Errorf("after the late message = %v", ids)
	}
	r = runCollab(t, env, "", "inbox", "ack", "--agent", "codex", "--until", "2026-01-11T17:00:00Z", "--json")
	var got struct {
		N int `json:"acknowledged"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 || got.N != 0 {
		t.Errorf("ack --json: exit %d, %q, %v", r.code, r.stdout, err)
	}
}

func TestInboxBadInput(t *testing.T) {
	root := newTree(t)
	post(t, root, "dev", "claude", "codex", "one", time.Date(2026, 1, 11, 16, 33, 0, 0, time.UTC))
	env := map[string]string{"COLLAB_ROOT": root}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no agent", []string{"inbox"}, 2, "no agent"},
		{"bad agent", []string{"inbox", "--agent", "../x"}, 2, "invalid name"},
		{"bad channel", []string{"inbox", "--agent", "a", "--channel", "a b"}, 2, "invalid name"},
		{"extra argument", []string{"inbox", "--agent", "a", "now"}, 2, "unexpected argument"},
		{"ack without until", []string{"inbox", "ack", "--agent", "a"}, 2, "no --until"},
		{"ack bad until", []string{"inbox", "ack", "--agent", "a", "--until", "yesterday"}, 2, "neither a message id"},
		{"ack unknown id", []string{"inbox", "ack", "--agent", "a", "--until", "msg-20260111-163300-x-0000"}, 1, "no such message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCollab(t, env, "", tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tt.code, tt.msg)
			}
		})
	}
}
