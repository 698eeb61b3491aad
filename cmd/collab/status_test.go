package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// TestStatusCommand: collab status shows a message answered by a real
// watcher, as text and as JSON, finding its channel by itself; an
// unknown id is exit 3.
func TestStatusCommand(t *testing.T) {
	root := newTree(t)
	startWatcher(t, root, "codex", "dev", nil)
	id := send(t, root, "dev", "human", "codex", "hello @nobody")
	waitFor(t, func() bool { return len(replies(t, root, "dev", "codex")[id]) == 1 })
	reply := replies(t, root, "dev", "codex")[id][0]
	env := map[string]string{"COLLAB_ROOT": root}

	r := runCollab(t, env, "", "status", id)
	if r.code != 0 || !strings.Contains(r.stdout, id+" in dev from human to codex") ||
		!strings.Contains(r.stdout, "answered by "+reply) ||
		!strings.Contains(r.stdout, "nobody  undeliverable") {
		t.Errorf("status: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, env, "", "status", "--channel", "dev", "--json", id)
	var st delivery.Status
	if err := json.Unmarshal([]byte(r.stdout), &st); r.code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v, stdout %q", r.code, err, r.stdout)
	}
	if len(st.Addressees) != 2 || st.Addressees[0].State != delivery.Answered || st.Addressees[0].Reply != reply ||
		st.Addressees[1].Agent != "nobody" || st.Addressees[1].State != delivery.Undeliverable {
		t.Errorf("status --json: %+v", st)
	}
	if r := runCollab(t, env, "", "status", "msg-20200101-000000-nobody-0000"); r.code != exitNothing {
		t.Errorf("status of no message: exit %d, stderr %q; want %d", r.code, r.stderr, exitNothing)
	}
	if r := runCollab(t, env, "", "status"); r.code != exitUsage {
		t.Errorf("status with no id: exit %d, want %d", r.code, exitUsage)
	}
}

// TestSendWaitEndsOnRefusal: send --wait ends at once, with exit 4, when
// the watcher's hop limit refuses the message (the guard's notice is
// printed as the answer), or when no such agent exists; each state is
// reported on stderr.
func TestSendWaitEndsOnRefusal(t *testing.T) {
	root := newTree(t)
	startWatcher(t, root, "a3", "dev", nil, "--max-hops", "1")
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev", "COLLAB_HOPS": "1"}
	r := runCollab(t, env, "", "send", "--wait", "--agent", "a2", "--to", "a3", "--poll", "50ms", "--timeout", "10m", "go deeper")
	if r.code != exitRefused || !strings.Contains(r.stderr, "a3: refused by max-hops") ||
		!strings.Contains(r.stdout, "[collab] a3 stopped answering this thread") {
		t.Errorf("send --wait refused: exit %d, stdout %q, stderr %q; want %d", r.code, r.stdout, r.stderr, exitRefused)
	}

	delete(env, "COLLAB_HOPS")
	r = runCollab(t, env, "", "send", "--wait", "--agent", "a2", "--to", "nobody", "--poll", "50ms", "--timeout", "10m", "hello?")
	if r.code != exitRefused || !strings.Contains(r.stderr, "nobody: undeliverable") {
		t.Errorf("send --wait to no one: exit %d, stderr %q; want %d", r.code, r.stderr, exitRefused)
	}
}

// TestWhoBacklog: a watcher whose CLI is stuck shows its backlog in who,
// and who --check --max-backlog-age fails once the oldest unanswered
// message is older than the limit, saying why.
func TestWhoBacklog(t *testing.T) {
	root := newTree(t)
	startWatcher(t, root, "codex", "dev", []string{"FAKE_CLI_SLEEP=60s"})
	env := map[string]string{"COLLAB_ROOT": root}
	send(t, root, "dev", "human", "codex", "first")
	send(t, root, "dev", "human", "codex", "second")
	waitFor(t, func() bool {
		s, err := presence.Read(tree.Root(root), "codex")
		return err == nil && s.Backlog == 2
	})
	r := runCollab(t, env, "", "who")
	header, rows, _ := tableRows(t, r.stdout)
	if want := "AGENT STATE AGE HOST CHANNEL MESSAGE BACKLOG OLDEST REPLIED"; strings.Join(header, " ") != want {
		t.Errorf("who header %v, want %s", header, want)
	}
	if row := rows["codex"]; len(row) < 9 || row[6] != "2" || row[8] != "-" {
		t.Errorf("who row %v, want a backlog of 2, never replied", row)
	}
	if r := runCollab(t, env, "", "who", "--check", "codex", "--max-backlog-age", "1h"); r.code != 0 {
		t.Errorf("who --check within the backlog age: exit %d, stderr %q", r.code, r.stderr)
	}
	waitFor(t, func() bool {
		r = runCollab(t, env, "", "who", "--check", "codex", "--max-backlog-age", "1s")
		return r.code == exitFailure
	})
	if !strings.Contains(r.stderr, "oldest unanswered message is") || !strings.Contains(r.stderr, "backlog 2") {
		t.Errorf("who --check with a stuck backlog: stderr %q, want why", r.stderr)
	}
	if r := runCollab(t, env, "", "who", "--max-backlog-age", "1s"); r.code != exitUsage {
		t.Errorf("--max-backlog-age without --check: exit %d, want %d", r.code, exitUsage)
	}
}
