package service

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// EnvKey is the variable that names the key file an agent signs with
// (collab's --key); a delegated watcher's names its agent's own key.
const EnvKey = "COLLAB_KEY"

// inherited are the variables of a delegator's model run that must not
// reach the delegated watcher: they describe the delegator's run, or are
// the delegator's.
var inherited = []string{"COLLAB_AGENT", "COLLAB_CHANNEL", "COLLAB_MESSAGE_ID", "COLLAB_FROM", watcher.EnvHops,
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
func (m *Mount) startSession(ctx context.Context, s *sessions.Session, timeout time.Duration) (*watcherProc, error) {
	if err := checkSessionEnv(s); err != nil {
		return nil, err
	}
	p, err := m.spawnWatcher(s.Log, s.Args, clearEnv(s.Env))
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

// watcherProc is a detached collab watcher started by spawnWatcher.
type watcherProc struct {
	cmd     *exec.Cmd
	exited  chan error
	root    tree.Root
	logName string
}

// spawnWatcher runs Config.Program with args in its own session (so it
// outlives the caller and a terminal's hang-up), with the variables of
// env added to this process's environment, its output appended to
// ROOT/logs/logName.
func (m *Mount) spawnWatcher(logName string, args, env []string) (*watcherProc, error) {
	root := m.cfg.Root
	logs, err := safedir.Create(root.Logs())
	if err != nil {
		return nil, err
	}
	defer logs.Close()
	log, err := logs.OpenAppend(logName, safedir.FilePerm)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	if m.cfg.Program == "" {
		return nil, errkind.New(errkind.Unavailable, "no collab program to run the watcher")
	}
	cmd := exec.Command(m.cfg.Program, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &watcherProc{cmd: cmd, exited: make(chan error, 1), root: root, logName: logName}
	go func() { p.exited <- cmd.Wait() }()
	return p, nil
}

// pid is the process's id, and its process group's and session's.
func (p *watcherProc) pid() int { return p.cmd.Process.Pid }

// await polls ready until it is true and returns nil, leaving the process
// running. It returns an error with the end of the process's log when the
// process ends first, a Timeout after timeout (the process is left
// running: the caller ends it or not), or ctx's error.
func (p *watcherProc) await(ctx context.Context, timeout time.Duration, notYet string, ready func() bool) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for {
		select {
		case err := <-p.exited:
			p.exited <- err
			return fmt.Errorf("the watcher ended (%v); its log %s/%s:\n%s", err, p.root.Logs(), p.logName, p.logTail())
		case <-deadline:
			return errkind.New(errkind.Timeout, "%s after %v; see %s/%s", notYet, timeout, p.root.Logs(), p.logName)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if ready() {
			return nil
		}
	}
}

// kill ends the process's group at once and waits for it.
func (p *watcherProc) kill() {
	proc.EndGroup(p.pid(), 0)
	<-p.exited
}

// logTail is the end of the process's log.
func (p *watcherProc) logTail() string {
	d, err := safedir.Open(p.root.Logs())
	if err != nil {
		return ""
	}
	defer d.Close()
	data, _, err := d.ReadFile(p.logName, 16<<20)
	if err != nil {
		return ""
	}
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return string(data)
}
