package sessions

import (
	"path/filepath"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Path is the file of session id's record.
func Path(root tree.Root, id string) string {
	return filepath.Join(root.Delegations(), fileName(id))
}

// Check refuses s's record unless the account uid may act on it (see
// Trust in the package doc): the file s was read from ([Read], [Find],
// [List]) is uid's, a regular file, writable by no one else, with one
// name. The refusal is a [*RecordError] wrapping [ErrForeign] or
// [ErrUnsafe]. A session not read from its file is refused.
func Check(root tree.Root, s *Session, uid int) error {
	return s.file.Check(Path(root, s.ID), uid)
}

// Alive reports whether s's recorded process still runs it on this host
// (its group has the session's variable: not a reused pid).
func Alive(s *Session) bool {
	return s.PID > 0 && proc.PIDAlive(s.PID) && proc.GroupHasEnv(s.PID, EnvSession+"="+s.ID)
}

// Stop ends s's watcher on this host (host: its name) with SIGTERM to its
// group (it stops as on a signal, its running CLI given the watcher's
// grace; SIGKILL after grace), then any CLI run of the agent left
// running, and records s stopped. A watcher already gone is fine. The
// caller checks that s runs on this host and that [Check] passes its record.
func Stop(root tree.Root, s *Session, host string, grace time.Duration) error {
	if s.PID > 0 && Alive(s) {
		if _, err := proc.EndGroup(s.PID, grace); err != nil {
			return err
		}
	}
	if js, err := jobs.List(root, s.Agent); err == nil {
		for _, j := range js {
			if !j.Done() && j.Host == host && j.PID > 0 && proc.GroupHasEnv(j.PID, "COLLAB_AGENT="+s.Agent) {
				proc.EndGroup(j.PID, 5*time.Second)
			}
		}
	}
	if s.Active() {
		s.Status = Stopped
	}
	return Update(root, s)
}
