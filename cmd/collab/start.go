package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/presence"
)

// envBackgroundChild marks the detached child of collab start --background.
const envBackgroundChild = "COLLAB_WORKFLOW_CHILD"

// envWorkflowResume marks a detached child that collab resume restarts:
// it posts no kickoff.
const envWorkflowResume = "COLLAB_WORKFLOW_RESUME"

func runStart(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("start", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab start FILE [--instance I] [--background]

Start the workflow FILE as collab run does (setup, one watcher per agent,
the kickoff) and keep the team running until stopped: a signal, or
collab stop. With --background, start it detached (its output goes to
ROOT/logs/WORKFLOW--INSTANCE.log) and return once every agent is AWAKE.

Flags:
`)
		fs.PrintDefaults()
	}
	background := fs.Bool("background", false, "detach, and return once every agent is AWAKE")
	startTimeout := fs.Duration("start-timeout", time.Minute, "with --background, how long to wait for the agents to be AWAKE")
	tf := addTeamFlags(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("start: want one workflow FILE (see 'collab start --help')")
	}
	if *background {
		return startBackground(ctx, args, fs.Arg(0), tf, *startTimeout, getenv, stdout)
	}
	t, err := newTeam(ctx, "start", fs.Arg(0), tf, getenv, stderr)
	if err != nil {
		return err
	}
	if err := t.start(ctx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	status, runErr := workflow.Stopped, error(nil)
	if getenv(envBackgroundChild) == "1" {
		t.record.Args = args
		t.record.Dir, _ = os.Getwd()
	}
	// The kickoff is posted before the record says running: start
	// --background returns once it does, and resume (which restarts a
	// running instance) never posts it again.
	resumed := getenv(envWorkflowResume) == "1"
	kickoff := ""
	if !resumed {
		if m, err := t.postKickoff(getenv); err != nil {
			runErr = err
		} else {
			kickoff = m.ID
		}
	}
	if runErr == nil {
		runErr = t.setStatus(workflow.Running)
	}
	if runErr == nil {
		if resumed {
			fmt.Fprintf(stdout, "%s@%s: resumed in channel %s\n", t.file.Name, t.instance, t.channel)
		} else {
			fmt.Fprintf(stdout, "%s@%s: running in channel %s (kickoff %s)\n", t.file.Name, t.instance, t.channel, kickoff)
		}
		if runErr = t.hold(ctx); runErr != nil {
			status = workflow.Failed
		}
	}
	t.stop()
	if err := t.setStatus(status); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// hold waits until ctx is done, the stop file appears or a watcher fails.
func (t *team) hold(ctx context.Context) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if t.stopRequested() {
			return nil
		}
		if err := t.watcherErr(); err != nil {
			return err
		}
	}
}

// startBackground re-runs collab start without --background, detached in
// its own session with its output in ROOT/logs/WORKFLOW--INSTANCE.log, and
// returns once its record says running (every agent AWAKE), or with the
// child's error when it ends first.
func startBackground(ctx context.Context, args []string, path string, tf *teamFlags, timeout time.Duration, getenv env, stdout io.Writer) error {
	f, err := workflow.Load(path)
	if err != nil {
		return usageErrorf("start: %v", err)
	}
	instance := *tf.instance
	if instance == "" {
		instance = workflow.NewInstance(time.Now())
	}
	if err := workflow.CheckInstance(instance); err != nil {
		return usageErrorf("start: --instance: %v", err)
	}
	root := tree.Resolve(*tf.root, getenv)
	if err := refuseRunning(root, "start", f.Name, instance); err != nil {
		return err
	}
	child := []string{"start"}
	for _, a := range args {
		if a != "--background" && a != "--background=true" {
			child = append(child, a)
		}
	}
	if *tf.instance == "" {
		child = append(child, "--instance", instance)
	}
	logName := f.Name + workflow.Sep + instance + ".log"
	d, err := spawnDetached(root, logName, "", child, []string{envBackgroundChild + "=1"})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	started := time.Now().Add(-time.Second)
	err = d.await(ctx, timeout, "start", "the agents are not AWAKE", func() bool {
		recs, _ := workflow.Records(root)
		for _, r := range recs {
			if r.Name == f.Name && r.Instance == instance && r.PID == d.pid() && r.Started.After(started) && r.Status == workflow.Running {
				return true
			}
		}
		return false
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s@%s: running in the background (pid %d, log %s/%s)\n", f.Name, instance, d.pid(), root.Logs(), logName)
	return nil
}

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

func runStop(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("stop", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab stop NAME@INSTANCE | @INSTANCE | WORKFLOW@INSTANCE | --all

Stop running workflow instances: write each one's stop file
(ROOT/workflows/WORKFLOW--INSTANCE.stop), which the process running it
polls on any host, and wait until its agents are OFFLINE. NAME@INSTANCE
names an agent of the instance (the whole instance stops); @INSTANCE every
instance of that name.

Flags:
`)
		fs.PrintDefaults()
	}
	all := fs.Bool("all", false, "stop every running instance")
	timeout := fs.Duration("timeout", time.Minute, "how long to wait for the agents to be OFFLINE (then exit 3)")
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if *all == (fs.NArg() == 1) || fs.NArg() > 1 {
		return usageErrorf("stop: give one target (NAME@INSTANCE or @INSTANCE) or --all")
	}
	root := tree.Resolve(*rootf, getenv)
	recs, err := workflow.Records(root)
	if err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	var name, instance string
	if !*all {
		var ok bool
		name, instance, ok = strings.Cut(fs.Arg(0), "@")
		if !ok {
			return usageErrorf("stop: %q: want NAME@INSTANCE or @INSTANCE", fs.Arg(0))
		}
		if err := workflow.CheckInstance(instance); err != nil {
			return usageErrorf("stop: %v", err)
		}
	}
	now := time.Now()
	var targets []workflow.Record
	for _, r := range recs {
		if st := judge(root, r, now); st != workflow.Running && st != workflow.Starting {
			continue
		}
		if !*all && (r.Instance != instance || name != "" && r.Name != name && !slices.Contains(r.Agents, name+workflow.Sep+instance)) {
			continue
		}
		targets = append(targets, r)
	}
	if len(targets) == 0 {
		return &exitError{code: exitNothing, msg: "stop: no running instance matches"}
	}
	for _, r := range targets {
		if err := workflow.MayStop(root, workflow.RunnerOf(r), os.Geteuid()); err != nil {
			return &exitError{code: exitRefused, msg: fmt.Sprintf("stop: %s@%s: %v", r.Name, r.Instance, err)}
		}
	}
	for _, r := range targets {
		data, _ := json.Marshal(map[string]any{"by": loginName(ctx), "host": hostname(), "time": now.UTC()})
		if err := workflow.RequestStop(root, r.Name, r.Instance, data); err != nil {
			return fmt.Errorf("stop: %w", err)
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(*timeout)
	for {
		left := 0
		for _, r := range targets {
			for _, a := range r.Agents {
				if s, err := presence.Read(root, a); err == nil && presence.IsAwake(s.Effective(time.Now(), 0, hostname(), nil)) {
					left++
				}
			}
		}
		if left == 0 {
			left = stillRecorded(root, targets)
		}
		if left == 0 {
			for _, r := range targets {
				fmt.Fprintf(stdout, "%s@%s: stopped\n", r.Name, r.Instance)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return &exitError{code: exitNothing, msg: fmt.Sprintf("stop: %d agents still AWAKE after %v", left, *timeout)}
		case <-tick.C:
		}
	}
}

func runLs(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("ls", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab ls [--json]

List the workflow instances (ROOT/workflows): NAME, INSTANCE, SOURCE (the
file), STATUS (starting, running, done, failed, stopped, timeout; dead for
a running one whose process or agents are gone) and AGENTS. Then the
delegated sessions not removed (collab delegate ls), as NAME "delegate",
INSTANCE the session ID, SOURCE the branch; in JSON with a "delegation"
member, the session's record.

Flags:
`)
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print JSON lines")
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("ls: unexpected argument %q", fs.Arg(0))
	}
	root := tree.Resolve(*rootf, getenv)
	recs, err := workflow.Records(root)
	if err != nil {
		return fmt.Errorf("ls: %w", err)
	}
	slices.SortFunc(recs, func(a, b workflow.Record) int { return a.Started.Compare(b.Started) })
	now := time.Now()
	if !*asJSON {
		fmt.Fprintf(stdout, "%-20s %-16s %-30s %-8s %s\n", "NAME", "INSTANCE", "SOURCE", "STATUS", "AGENTS")
	}
	for _, r := range recs {
		r.Status = judge(root, r, now)
		if *asJSON {
			data, err := json.Marshal(r)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s\n", data)
			continue
		}
		var agents []string
		for _, a := range r.Agents {
			agents = append(agents, workflow.Display(a))
		}
		fmt.Fprintf(stdout, "%-20s %-16s %-30s %-8s %s\n", tree.Printable(r.Name), tree.Printable(r.Instance),
			tree.Printable(r.File), r.Status, tree.Printable(strings.Join(agents, ",")))
	}
	list, err := sessions.List(root)
	if err != nil {
		return fmt.Errorf("ls: %w", err)
	}
	for i := range list {
		s := &list[i]
		if s.Status == sessions.Removed {
			continue
		}
		status := s.Status
		if s.Active() && s.Host == hostname() && !sessionAlive(s) {
			status = wfDead
		}
		if *asJSON {
			data, err := json.Marshal(struct {
				workflow.Record
				Delegation *sessions.Session `json:"delegation"`
			}{workflow.Record{Name: "delegate", Instance: s.ID, File: s.Branch, Host: s.Host, PID: s.PID, Started: s.Created,
				Status: status, Agents: []string{s.Agent}, Channel: s.Channel}, s})
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s\n", data)
			continue
		}
		fmt.Fprintf(stdout, "%-20s %-16s %-30s %-8s %s\n", "delegate", s.ID, tree.Printable(s.Branch), status, s.Agent)
	}
	return nil
}

// stillRecorded counts the targets whose record still says running or
// starting while their process lives: it has not finished stopping.
func stillRecorded(root tree.Root, targets []workflow.Record) int {
	recs, _ := workflow.Records(root)
	n := 0
	for _, r := range recs {
		for _, t := range targets {
			if r.Name == t.Name && r.Instance == t.Instance && (r.Status == workflow.Running || r.Status == workflow.Starting) &&
				!(r.Host == hostname() && r.PID > 0 && !proc.PIDAlive(r.PID)) {
				n++
			}
		}
	}
	return n
}
