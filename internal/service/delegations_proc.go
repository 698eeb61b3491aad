package service

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/presence"
)

// EnvKey is the variable that names the key file an agent signs with
// (collab's --key); a delegated watcher's names its agent's own key.
const EnvKey = "COLLAB_KEY"

// inherited are the variables of a delegator's model run that must not
// reach the delegated watcher: they describe the delegator's run, or are
// the delegator's.
var inherited = []string{"COLLAB_AGENT", "COLLAB_CHANNEL", "COLLAB_MESSAGE_ID", "COLLAB_FROM", runenv.Hops,
	"COLLAB_CLI", "COLLAB_CMD", "COLLAB_MODEL", "COLLAB_WORKDIR", sessions.EnvWorktree, sessions.EnvBranch,
	sessions.EnvDelegatedBy, sessions.EnvSession, sessions.EnvDepth,
	EnvKey} // the delegator's own key: the new agent's is its own (sessionEnv)

// sessionEnv are the variables a session's record may set for its
// watcher: those Delegate records. startSession refuses a record that
// sets any other (a loader variable such as LD_PRELOAD would run code in
// the watcher): the record is this account's and no one else's to write
// (sessions.Check), and it never needs more.
var sessionEnv = []string{sessions.EnvDepth, sessions.EnvWorktree, sessions.EnvBranch,
	sessions.EnvDelegatedBy, sessions.EnvSession, EnvKey}

// startSession runs s's watcher detached with its recorded arguments and
// waits until its presence is AWAKE from that process; then it records s
// running with the process's pid. On failure the process is ended.
func (m *Mount) startSession(ctx context.Context, s *sessions.Session, timeout time.Duration) (*detached, error) {
	if err := checkSessionEnv(s); err != nil {
		return nil, err
	}
	p, err := m.spawn("the watcher", s.Log, "", s.Args, clearEnv(s.Env))
	if err != nil {
		return nil, err
	}
	root := m.cfg.Root
	err = p.await(ctx, timeout, s.Agent+" is not AWAKE", func() bool {
		st, err := presence.Read(root, s.Agent)
		return err == nil && st.State == presence.StateAwake && st.WatcherPID == p.pid()
	})
	if err == nil {
		s.PID, s.Status = p.pid(), sessions.Running
		err = sessions.Update(root, s)
	}
	if err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

// checkSessionEnv refuses (Forbidden) a session whose record sets a
// variable for its watcher that Delegate never sets (sessionEnv), or
// that names as its key another file than its own agent's.
func checkSessionEnv(s *sessions.Session) error {
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		if !slices.Contains(sessionEnv, k) {
			return errkind.New(errkind.Forbidden, "the record of session %s sets %s for its watcher, which collab delegate never does; remove the record", s.ID, tree.Printable(k))
		}
		if k == EnvKey && v != "" && (v != s.Key || filepath.Base(v) != s.Agent+".key") {
			return errkind.New(errkind.Forbidden, "the record of session %s gives its watcher the key %s, not %s's own; remove the record", s.ID, tree.Printable(v), s.Agent)
		}
	}
	return nil
}

// clearEnv is env preceded by an empty setting of each inherited variable
// that env does not set, so the detached watcher does not take them from
// the delegator's run (a later setting wins in os/exec).
func clearEnv(env []string) []string {
	var out []string
	for _, k := range inherited {
		out = append(out, k+"=")
	}
	return append(out, env...)
}
