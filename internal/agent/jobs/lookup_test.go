package jobs_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// TestNewIDs: job ids are "job-" and a UUIDv7, distinct and time-ordered,
// and valid record names.
func TestNewIDs(t *testing.T) {
	root := tree.Root(t.TempDir())
	seen := map[string]bool{}
	prev := ""
	for range 100 {
		id := jobs.NewID()
		if seen[id] || !strings.HasPrefix(id, "job-") || len(id) != len("job-")+36 || id[len("job-")+14] != '7' {
			t.Fatalf("NewID %q: want a fresh job-UUIDv7", id)
		}
		if id < prev {
			t.Errorf("NewID %q after %q: want time order", id, prev)
		}
		seen[id], prev = true, id
	}
	j := newJob("m1")
	j.ID = jobs.NewID()
	mustStart(t, root, j, nil)
	if got := mustRead(t, root, agent, j.ID); got.Message != "m1" {
		t.Errorf("read back %+v", got)
	}
	if a, b := jobs.NewInstance(), jobs.NewInstance(); a == b || len(a) != 36 {
		t.Errorf("NewInstance %q %q: want two UUIDs", a, b)
	}
}

// TestForMessageAndLookup: one message answered by two agents, and run
// twice by one of them, gives three jobs; ForMessage finds the newest of
// an agent, Lookup finds by job id or message id, refuses a message id
// that names jobs of two agents unless narrowed, and still finds records
// named the old way ("job-" and the message id).
func TestForMessageAndLookup(t *testing.T) {
	root := tree.Root(t.TempDir())
	c := newClock()
	start := func(agent, id, msg string) jobs.Job {
		t.Helper()
		j := jobs.Job{ID: id, Agent: agent, Host: "h", Channel: "general", Message: msg, From: "alice", CLI: "fake"}
		r := mustStart(t, root, j, c.Now)
		c.Add(time.Second)
		return r.Job()
	}
	first := start("codex", jobs.NewID(), "m1")
	other := start("claude", jobs.NewID(), "m1")
	rerun := start("codex", jobs.NewID(), "m1")
	old := start("gemini", "job-m2", "m2")
	if first.ID == other.ID || first.ID == rerun.ID {
		t.Fatalf("ids %s %s %s: want distinct", first.ID, other.ID, rerun.ID)
	}
	if j, err := jobs.ForMessage(root, "codex", "general", "m1"); err != nil || j.ID != rerun.ID {
		t.Errorf("ForMessage(codex, m1) = %s, %v; want the rerun %s", j.ID, err, rerun.ID)
	}
	if _, err := jobs.ForMessage(root, "codex", "other", "m1"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ForMessage in another channel: err %v, want ErrNotExist", err)
	}
	tests := []struct {
		name, agent, id string
		want            string // job id; "" an error
		ambiguous       bool
	}{
		{"job id", "", first.ID, first.ID, false},
		{"job id narrowed", "codex", other.ID, "", false},
		{"message of two agents", "", "m1", "", true},
		{"message narrowed", "claude", "m1", other.ID, false},
		{"message, newest job", "codex", "m1", rerun.ID, false},
		{"old record by id", "", "job-m2", old.ID, false},
		{"old record by message", "", "m2", old.ID, false},
		{"none", "", "m3", "", false},
		{"bad id", "", "../x", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := jobs.Lookup(root, tt.agent, tt.id)
			if tt.want != "" {
				if err != nil || j.ID != tt.want {
					t.Errorf("Lookup = %s, %v; want %s", j.ID, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Lookup = %s; want an error", j.ID)
			}
			if errors.Is(err, jobs.ErrAmbiguous) != tt.ambiguous {
				t.Errorf("err %v: ambiguous %v, want %v", err, !tt.ambiguous, tt.ambiguous)
			}
			if tt.ambiguous && (!strings.Contains(err.Error(), "codex "+rerun.ID) || !strings.Contains(err.Error(), "claude "+other.ID)) {
				t.Errorf("err %q: want both agents' jobs listed", err)
			}
		})
	}
}

// TestWatchStatus: a record that says running is interrupted when its
// watcher is gone: stale or OFFLINE presence, another instance's
// heartbeat on its host, on this host and boot a dead watcher pid, or a
// reboot since. Anything else keeps the record's status.
func TestWatchStatus(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	beat := func(age time.Duration, state, host, instance string) *presence.Status {
		return &presence.Status{AgentID: agent, Timestamp: presence.FormatTime(now.Add(-age)), State: state,
			Substate: presence.SubWorking, Host: host, WatcherPID: 4242, Instance: instance}
	}
	alive := func(pid int) bool { return pid == 4242 }
	running := jobs.Job{ID: "job-x", Agent: agent, Host: "a", Boot: "b1", Status: jobs.Running, Instance: "i1", WatcherPID: 4242, PID: 99}
	dead := running
	dead.WatcherPID = 77
	older := running // written by an older watcher: no instance, no watcher pid
	older.Instance, older.WatcherPID = "", 0
	done := running
	done.Status = jobs.Completed
	tests := []struct {
		name string
		j    jobs.Job
		w    jobs.Watch
		want string
	}{
		{"fresh heartbeat", running, jobs.Watch{Presence: beat(time.Second, presence.StateAwake, "a", "i1"), Host: "c"}, jobs.Running},
		{"no presence, other host", running, jobs.Watch{Host: "c"}, jobs.Running},
		{"stale heartbeat", running, jobs.Watch{Presence: beat(time.Hour, presence.StateAwake, "a", "i1"), Host: "c"}, jobs.Interrupted},
		{"offline", running, jobs.Watch{Presence: beat(time.Second, presence.StateOffline, "a", "i1"), Host: "c"}, jobs.Interrupted},
		{"another instance on its host", running, jobs.Watch{Presence: beat(time.Second, presence.StateAwake, "a", "i2"), Host: "c"}, jobs.Interrupted},
		{"another instance on another host", running, jobs.Watch{Presence: beat(time.Second, presence.StateAwake, "d", "i2"), Host: "c"}, jobs.Running},
		{"watcher pid dead here", dead, jobs.Watch{Host: "a", Boot: "b1"}, jobs.Interrupted},
		{"watcher pid dead, other boot", dead, jobs.Watch{Host: "a", Boot: "b2"}, jobs.Interrupted},
		{"watcher pid alive here", running, jobs.Watch{Host: "a", Boot: "b1"}, jobs.Running},
		{"watcher pid not checked elsewhere", dead, jobs.Watch{Host: "c", Boot: "b1"}, jobs.Running},
		{"older record, CLI dead, stale", older, jobs.Watch{Presence: beat(time.Hour, presence.StateAwake, "a", ""), Host: "a", Boot: "b1"}, jobs.Interrupted},
		{"older record, CLI dead, fresh", older, jobs.Watch{Presence: beat(time.Second, presence.StateAwake, "a", ""), Host: "a", Boot: "b1"}, jobs.Running},
		{"finished", done, jobs.Watch{Presence: beat(time.Hour, presence.StateOffline, "a", "i2"), Host: "a", Boot: "b1"}, jobs.Completed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.w.Now, tt.w.Alive = now, alive
			if got := tt.w.Status(tt.j); got != tt.want {
				t.Errorf("Status = %q, want %q", got, tt.want)
			}
		})
	}
}
