package main

import (
	"os"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/web"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// TestStopRefusalsAtEveryDoor: collab delegate stop and the dashboard's
// stop refuse the same sessions with the same kind (one owner, the
// service layer), each door mapping it its way: a removed session and
// one on another host are refused (exit 4, 409), another account's
// record is forbidden (exit 4, 403), none is not found (exit 3, 404).
// Before the service layer, stop of a removed session exited 3 where the
// dashboard answered 409.
func TestStopRefusalsAtEveryDoor(t *testing.T) {
	root, env := newWorkflowRoot(t)
	record := func(id, host, status string) *sessions.Session {
		s := &sessions.Session{ID: id, Agent: "ann-" + id, DelegatedBy: "ann", Depth: 1, Repo: "/src/repo",
			Worktree: "/src/wt-" + id, Branch: "b-" + id, Base: "main", Channel: sessions.Channel(id), CLI: "claude",
			Host: host, Created: time.Now().UTC(), Status: status}
		if err := sessions.Create(tree.Root(root), s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	record("aaaa", hostname(), sessions.Removed)
	record("bbbb", "elsewhere", sessions.Running)
	cases := []struct {
		id         string
		exit, http int
	}{
		{"aaaa", exitRefused, 409},
		{"bbbb", exitRefused, 409},
		{"0000", exitNothing, 404},
	}
	if os.Chown(recordPath(tree.Root(root), record("cccc", hostname(), sessions.Running).ID), 65534, 65534) == nil {
		cases = append(cases, struct {
			id         string
			exit, http int
		}{"cccc", exitRefused, 403})
	}
	srv, err := web.New(web.Config{Root: tree.Root(root), Person: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, c := range cases {
		r := runCollab(t, env, "", "delegate", "stop", c.id)
		_, code, err := srv.StopDelegation(c.id, "alice")
		if r.code != c.exit || code != c.http || err == nil {
			t.Errorf("stop %s: collab exit %d (%s), dashboard %d (%v); want exit %d and %d", c.id, r.code, r.stderr, code, err, c.exit, c.http)
		}
	}
}
