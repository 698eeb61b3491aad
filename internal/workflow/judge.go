package workflow

import (
	"time"

	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// Dead is the status Judge gives a running record whose process or
// agents are gone; it is never written.
const Dead = "dead"

// Judge is r's status as collab ls shows it: a running (or starting)
// record whose process is dead on host (this host), or whose agents are
// all OFFLINE or STALE, is Dead. Its cost is one presence read per agent
// (in the instance's StoreRoot).
func Judge(root tree.Root, r Record, now time.Time, host string) string {
	if r.Status != Running && r.Status != Starting {
		return r.Status
	}
	if r.Host == host && r.PID > 0 && !proc.PIDAlive(r.PID) {
		return Dead
	}
	if r.Status == Starting {
		return r.Status
	}
	store := StoreRoot(root, r)
	for _, a := range r.Agents {
		if s, err := presence.Read(store, a); err == nil && presence.IsAwake(s.Effective(now, 0, host, proc.PIDAlive)) {
			return r.Status
		}
	}
	return Dead
}
