package bridge

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
)

// TestKillWho: a remote agent may kill through the bridge only a job its
// name may kill (jobs.MayKill): one that answers its message, or its own;
// another's job is forbidden and no kill file is written, whatever the
// bridge's account.
func TestKillWho(t *testing.T) {
	e := newEnv(t)
	s := e.server(Config{Host: "mounted"})
	job := func(agent, from string) string {
		t.Helper()
		id := jobs.NewID()
		if _, err := jobs.Start(e.root, jobs.Job{ID: id, Agent: agent, Channel: "dev", Message: "m", From: from}, nil); err != nil {
			t.Fatal(err)
		}
		return id
	}
	for _, tt := range []struct {
		name    string
		by, of  string
		job     string
		code    string // "" for OK
		written bool
	}{
		{"another's job", "alice", "bob", job("bob", "carol"), CodeForbidden, false},
		{"a job that answers it", "alice", "bob", job("bob", "alice"), "", true},
		{"its own job", "bob", "bob", job("bob", "carol"), "", true},
		{"its own job, recorded on its host only", "bob", "bob", "job-elsewhere", "", true},
		{"an unknown job of another", "alice", "bob", "job-nowhere", CodeNotFound, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := handle(t, s, OpKill, tt.by, killBody(t, e, tt.by, tt.of, tt.job), nil)
			if tt.code == "" && !r.OK || tt.code != "" && r.Code != tt.code {
				t.Fatalf("kill of %s's %s by %s: %+v, want code %q", tt.of, tt.job, tt.by, r, tt.code)
			}
			if got := jobs.KillRequested(e.root, tt.of, tt.job); got != tt.written {
				t.Errorf("kill file written: %v, want %v", got, tt.written)
			}
		})
	}

	// Another requester's request pending: a conflict, not a success
	// that the watcher would never act on.
	id := job("bob", "alice")
	if err := jobs.RequestKill(e.root, "bob", id, "carol", nil); err != nil {
		t.Fatal(err)
	}
	if r := handle(t, s, OpKill, "alice", killBody(t, e, "alice", "bob", id), nil); r.Code != CodeConflict {
		t.Errorf("kill while carol's is pending: %+v, want %s", r, CodeConflict)
	}
}

// killBody is a kill request of job of agent of, signed by by.
func killBody(t *testing.T, e *env, by, of, job string) []byte {
	t.Helper()
	k := jobs.Kill{By: by, Host: "laptop", Time: time.Now().UTC().Format(time.RFC3339Nano)}
	k.Signature = e.keys[by].Sign(k.Payload(of, job))
	raw, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(KillRequest{Of: of, Job: job, Kill: raw})
	if err != nil {
		t.Fatal(err)
	}
	return body
}
