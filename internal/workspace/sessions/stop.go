package sessions

import (
	"path/filepath"
	"time"

	"collab/internal/agent/jobs"
	"collab/internal/identity/keyring"
	"collab/internal/plumbing/proc"
	"collab/internal/plumbing/tree"
)

// Path is the file of session id's record.
func Path(root tree.Root, id string) string {
	return filepath.Join(root.Delegations(), fileName(id))
}

// Owned reports whether s's record file belongs to the account uid. What
// acts on a record's paths and processes (stop, rm, resume) acts only on
// its own (see Trust in the package doc).
func Owned(root tree.Root, s *Session, uid int) bool {
	return keyring.Owner(Path(root, s.ID)) == uid
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
// caller checks that s runs on this host and that its record is Owned.
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
