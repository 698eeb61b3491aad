package service

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/workflow"
)

// The variables a detached start runs with.
const (
	// EnvWorkflowChild marks the detached process of a background start
	// (and of resume): it records its arguments for collab resume.
	EnvWorkflowChild = "COLLAB_WORKFLOW_CHILD"
	// EnvWorkflowResume marks a detached process that collab resume
	// restarts: it runs no setup and posts no kickoff.
	EnvWorkflowResume = "COLLAB_WORKFLOW_RESUME"
)

// StartWorkflow keeps a team running (see Workflows).
func (m *Mount) StartWorkflow(ctx context.Context, req StartRequest) (*Started, error) {
	if req.Background {
		return m.startBackground(ctx, &req)
	}
	t, err := m.openTeam(ctx, &req.TeamRequest, false)
	if err != nil {
		return nil, err
	}
	defer t.dropStore()
	if err := t.start(ctx); err != nil {
		return nil, err
	}
	if req.Detached {
		t.record.Args = req.Args
		t.record.Dir, _ = os.Getwd()
	}
	st := &Started{Workflow: t.file.Name, Instance: t.instance, Channel: t.channel, Resumed: req.Resumed}
	// The kickoff is posted before the record says running: start
	// --background returns once it does, and resume (which restarts a
	// running instance) never posts it again. Without a kickoff the team
	// waits for the first message.
	var runErr error
	if !req.Resumed && t.kickoff != "" {
		if msg, err := t.postKickoff(ctx); err != nil {
			runErr = err
		} else {
			st.Kickoff = msg.ID
		}
	}
	if runErr == nil {
		runErr = t.setStatus(workflow.Running)
	}
	status := workflow.Stopped
	if runErr == nil {
		if req.Running != nil {
			req.Running(*st)
		}
		if runErr = t.hold(ctx); runErr != nil {
			status = workflow.Failed
		}
	}
	t.stop()
	if err := t.setStatus(status); err != nil && runErr == nil {
		runErr = err
	}
	return st, runErr
}

// hold waits until ctx is done, the stop file appears (or every agent's
// own) or a watcher fails.
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

// startBackground runs Config.Program's start of the team, detached in
// its own session with its output in ROOT/logs/WORKFLOW--INSTANCE.log,
// and returns once its record says running (every agent AWAKE), or with
// the process's error when it ends first.
func (m *Mount) startBackground(ctx context.Context, req *StartRequest) (*Started, error) {
	f, instance, err := m.loadInstance(req.File, req.Instance)
	if err != nil {
		return nil, err
	}
	if req.Log != nil {
		printWarnings(req.Log, f)
	}
	if err := m.refuseRunning(f.Name, instance); err != nil {
		return nil, err
	}
	args := append([]string{"start"}, slices.Clip(req.Args)...)
	if req.Instance == "" {
		args = append(args, "--instance", instance)
	}
	logName := f.Name + workflow.Sep + instance + ".log"
	d, err := m.spawn("the background process", logName, "", args, []string{EnvWorkflowChild + "=1"})
	if err != nil {
		return nil, errkind.Wrap(errkind.Failed, err)
	}
	if err := m.awaitRunning(ctx, d, f.Name, instance, req.StartTimeout, "the agents are not AWAKE"); err != nil {
		return nil, err
	}
	return &Started{Workflow: f.Name, Instance: instance, Channel: f.Channel(instance), PID: d.pid(),
		Log: filepath.Join(m.cfg.Root.Logs(), logName)}, nil
}

// awaitRunning waits until the record of instance of workflow name says
// running, written by the detached process d since now.
func (m *Mount) awaitRunning(ctx context.Context, d *detached, name, instance string, timeout time.Duration, notYet string) error {
	started := time.Now().Add(-time.Second)
	return d.await(ctx, timeout, notYet, func() bool {
		recs, _ := workflow.Records(m.cfg.Root)
		for _, r := range recs {
			if r.Name == name && r.Instance == instance && r.PID == d.pid() && r.Started.After(started) && r.Status == workflow.Running {
				return true
			}
		}
		return false
	})
}
