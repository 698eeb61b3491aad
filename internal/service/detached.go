package service

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/safedir"
)

// detached is a Config.Program the layer started to outlive it: a
// delegated agent's watcher, a team started in the background, or either
// restarted by resume.
type detached struct {
	what    string // "the watcher", "the background process": for errors
	cmd     *exec.Cmd
	exited  chan error
	m       *Mount
	logName string
}

// spawn runs Config.Program with args in its own session (so it outlives
// the caller and a terminal's hang-up), with the variables of env added
// to this process's environment, its output appended to ROOT/logs/logName,
// in the folder dir ("": this one). A Mount without a Program (one made
// by a test or a door that starts nothing) answers Unavailable.
func (m *Mount) spawn(what, logName, dir string, args, env []string) (*detached, error) {
	if m.cfg.Program == "" {
		return nil, errkind.New(errkind.Unavailable, "no collab program to run %s", what)
	}
	logs, err := safedir.Create(m.cfg.Root.Logs())
	if err != nil {
		return nil, err
	}
	defer logs.Close()
	log, err := logs.OpenAppend(logName, safedir.FilePerm)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(m.cfg.Program, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &detached{what: what, cmd: cmd, exited: make(chan error, 1), m: m, logName: logName}
	go func() { d.exited <- cmd.Wait() }()
	return d, nil
}

// pid is the process's id, and its process group's and session's.
func (d *detached) pid() int { return d.cmd.Process.Pid }

// await polls ready until it is true and returns nil, leaving the process
// running. It returns an error with the end of the process's log when the
// process ends first (Failed), Timeout after timeout (the process is
// left running: the caller ends it or not), or ctx's error.
func (d *detached) await(ctx context.Context, timeout time.Duration, notYet string, ready func() bool) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	logs := d.m.cfg.Root.Logs()
	for {
		select {
		case err := <-d.exited:
			d.exited <- err
			return errkind.New(errkind.Failed, "%s ended (%v); its log %s/%s:\n%s", d.what, err, logs, d.logName, d.logTail())
		case <-deadline:
			return errkind.New(errkind.Timeout, "%s after %v; see %s/%s", notYet, timeout, logs, d.logName)
		case <-ctx.Done():
			return errkind.Wrap(errkind.Failed, ctx.Err())
		case <-tick.C:
		}
		if ready() {
			return nil
		}
	}
}

// kill ends the process's group at once and waits for it.
func (d *detached) kill() {
	proc.EndGroup(d.pid(), 0)
	<-d.exited
}

// logTail is the end of the process's log.
func (d *detached) logTail() string {
	dir, err := safedir.Open(d.m.cfg.Root.Logs())
	if err != nil {
		return ""
	}
	defer dir.Close()
	data, _, err := dir.ReadFile(d.logName, 16<<20)
	if err != nil {
		return ""
	}
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return string(data)
}
