package main

// A collab process detached from this one (collab delegate, and resume of
// delegations and of workflow instances). Workflow instances are started
// detached by the service layer (service.Mount.StartWorkflow).
// TODO(i24 merge): delete once delegation and resume go through the layer.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
)

// envBackgroundChild marks the detached child of collab start --background.
const envBackgroundChild = service.EnvWorkflowChild

// envWorkflowResume marks a detached child that collab resume restarts:
// it posts no kickoff.
const envWorkflowResume = service.EnvWorkflowResume

// detached is a collab process started by spawnDetached.
type detached struct {
	cmd     *exec.Cmd
	exited  chan error
	root    tree.Root
	logName string
}

// spawnDetached runs this executable with args in its own session (so it
// outlives the caller and a terminal's hang-up), with the variables of env
// added to the caller's environment, its output appended to
// ROOT/logs/logName, in the folder dir ("": this one). collab start
// --background, delegate and resume use it.
func spawnDetached(root tree.Root, logName, dir string, args, env []string) (*detached, error) {
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
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &detached{cmd: cmd, exited: make(chan error, 1), root: root, logName: logName}
	go func() { d.exited <- cmd.Wait() }()
	return d, nil
}

// pid is the detached process's id, and its process group's and session's.
func (d *detached) pid() int { return d.cmd.Process.Pid }

// await polls ready until it is true and returns nil, leaving the process
// running. It returns an error with the end of the process's log when the
// process ends first, an exit-3 error after timeout (the process is left
// running: the caller ends it or not), or ctx's error.
func (d *detached) await(ctx context.Context, timeout time.Duration, cmd, notYet string, ready func() bool) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for {
		select {
		case err := <-d.exited:
			d.exited <- err
			return fmt.Errorf("%s: the background process ended (%v); its log %s/%s:\n%s", cmd, err, d.root.Logs(), d.logName, logTail(d.root, d.logName))
		case <-deadline:
			return &exitError{code: exitNothing, msg: fmt.Sprintf("%s: %s after %v; see %s/%s", cmd, notYet, timeout, d.root.Logs(), d.logName)}
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if ready() {
			return nil
		}
	}
}

// kill ends the detached process's group at once and waits for it.
func (d *detached) kill() {
	proc.EndGroup(d.pid(), 0)
	<-d.exited
}

// logTail is the end of a log file in ROOT/logs.
func logTail(root tree.Root, name string) string {
	d, err := safedir.Open(root.Logs())
	if err != nil {
		return ""
	}
	defer d.Close()
	data, _, err := d.ReadFile(name, 16<<20)
	if err != nil {
		return ""
	}
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return string(data)
}
