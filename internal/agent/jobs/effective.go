package jobs

import (
	"os"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// Watch is what a reader knows of an agent's watcher, to tell whether a
// job its record says is running still runs. The judgement is the same on
// every host: by the agent's presence (a heartbeat older than StaleAfter,
// OFFLINE, or a heartbeat from another watcher instance on the job's
// host), and on the job's own host and boot also by the watcher's pid.
type Watch struct {
	Presence   *presence.Status   // the agent's heartbeat; nil when there is none
	Now        time.Time          // zero: time.Now()
	StaleAfter time.Duration      // ≤ 0: presence.DefaultStaleAfter
	Host       string             // the host the reader runs on
	Boot       string             // its boot id ("" unknown: no pid check)
	Alive      func(pid int) bool // nil: proc.PIDAlive
}

// Status returns j's status as it stands: [Interrupted] for a record that
// says running (or awaiting input mid-run) whose watcher is gone, else the
// record's status.
//
// # Caveat
//
// One presence file holds the latest heartbeat of any of an agent's
// watchers, so a heartbeat of another instance counts against a job only
// on the job's own host (where one watcher of an agent runs at a time); a
// job whose watcher died on one host while another of its watchers beats
// on another host stays running until that watcher, which takes over the
// message's claim, runs it again and marks it interrupted.
func (w Watch) Status(j Job) string {
	if j.Done() {
		return j.Status
	}
	now := w.Now
	if now.IsZero() {
		now = time.Now()
	}
	alive := w.Alive
	if alive == nil {
		alive = proc.PIDAlive
	}
	here := j.Host != "" && strings.EqualFold(j.Host, w.Host)
	if here && j.Boot != "" && w.Boot != "" {
		if j.Boot != w.Boot {
			return Interrupted // the host rebooted since
		}
		if pid := j.WatcherPID; pid > 0 && !alive(pid) {
			return Interrupted
		}
		if j.WatcherPID == 0 && j.PID > 0 && !alive(j.PID) && !w.fresh(now) {
			return Interrupted // an older record: its CLI is gone and so is its watcher's heartbeat
		}
	}
	p := w.Presence
	if p == nil {
		return j.Status // nothing known: the record stands
	}
	switch p.Effective(now, w.StaleAfter, w.Host, alive) {
	case presence.Stale, presence.Offline:
		return Interrupted
	}
	if inst := Instance(*p); j.Instance != "" && inst != "" && inst != j.Instance && strings.EqualFold(p.Host, j.Host) {
		return Interrupted
	}
	return j.Status
}

// fresh reports whether the agent's heartbeat is fresh.
func (w Watch) fresh(now time.Time) bool {
	if w.Presence == nil {
		return true // unknown: not evidence
	}
	e := w.Presence.Effective(now, w.StaleAfter, w.Host, w.Alive)
	return e != presence.Stale && e != presence.Offline
}

// Instance returns the watcher instance a heartbeat names ("" none).
func Instance(s presence.Status) string { return s.Instance }

// Judge sets the Status of every job in js as w (one per agent, read from
// the tree by watch) sees it.
func Judge(js []Job, watch func(agent string) Watch) {
	cache := map[string]Watch{}
	for i := range js {
		if js[i].Done() {
			continue
		}
		w, ok := cache[js[i].Agent]
		if !ok {
			w = watch(js[i].Agent)
			cache[js[i].Agent] = w
		}
		js[i].Status = w.Status(js[i])
	}
}

// Observe returns what this host knows of agent's watcher: its heartbeat
// (none if it cannot be read), this host's name and boot id.
func Observe(root tree.Root, agent string, staleAfter time.Duration) Watch {
	w := Watch{StaleAfter: staleAfter, Host: LocalHost(), Boot: BootID()}
	if p, err := presence.Read(root, agent); err == nil {
		w.Presence = &p
	}
	return w
}

// LocalHost is this host's name, as watchers record it.
func LocalHost() string {
	h, _ := os.Hostname()
	return h
}

// BootID is this host's boot id ("" where there is none).
func BootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}
