package service

// The team supervisor: a workflow instance run by this process, one
// watcher per agent in it, the instance record and the stop files (the
// file format is package workflow's).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collabdev/collab/internal/agent/watchsetup"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// team is a workflow instance being run by this process.
type team struct {
	m        *Mount
	file     *workflow.File
	instance string
	channel  string
	ids      []string // agent ids, in file order
	names    []string // the agents' names, as the author wrote them
	kickoff  string
	from     Actor
	record   workflow.Record
	agents   []*teamAgent // in file order, once prepared
	started  time.Time
	log      io.Writer
	// store holds the instance's channel, documents, presence and jobs,
	// and sm is the Mount on it: the mount's tree, or a memory store
	// (workflows_store.go). The record and stop files are the mount's.
	store tree.Root
	sm    *Mount

	prior *workflow.Record // the record claim replaced, if any
	mu    sync.Mutex
	errs  []error // watchers that returned an error

	stopRefused bool // a refused stop file was reported
}

// teamAgent is one agent's watcher.
type teamAgent struct {
	id, name string
	cfg      *watcher.Config
	done     func() // releases what watchsetup.Prepare opened
	cancel   context.CancelFunc
	ended    chan struct{}
	stopped  atomic.Bool // stopped on its own (an agent's stop file)
}

// loadInstance loads the workflow file and names its instance: the one
// given, else a new one (workflow.NewInstance). A bad file or instance
// name is Invalid.
func (m *Mount) loadInstance(file, instance string) (*workflow.File, string, error) {
	f, err := workflow.Load(file)
	if err != nil {
		return nil, "", errkind.Wrap(errkind.Invalid, err)
	}
	if instance == "" {
		instance = workflow.NewInstance(m.cfg.Now())
	}
	if err := workflow.CheckInstance(instance); err != nil {
		return nil, "", errkind.New(errkind.Invalid, "--instance: %w", err)
	}
	return f, instance, nil
}

// openTeam loads the workflow, claims the instance, opens its store,
// runs its setup and renders its kickoff, makes its documents, and
// prepares every agent's watcher: everything that may fail before an
// agent starts. It prints the file's warnings on req.Log. A bad file,
// instance, variable or agent setting is Invalid, as is an instance
// already running and, for a run (which is done when the kickoff's
// conversation is), a file without a kickoff; a setup step that fails
// is Failed.
func (m *Mount) openTeam(ctx context.Context, req *TeamRequest, run bool) (*team, error) {
	f, instance, err := m.loadInstance(req.File, req.Instance)
	if err != nil {
		return nil, err
	}
	if run && f.Kickoff == "" && !req.Resumed {
		return nil, errkind.New(errkind.Invalid, "%s has no kickoff: a run is done when the conversation its kickoff starts is; add kickoff:, or use start, which waits for the first message", req.File)
	}
	t := &team{m: m, file: f, instance: instance, channel: f.Channel(instance), from: req.From, log: req.Log}
	if t.log == nil {
		t.log = io.Discard
	}
	printWarnings(t.log, f)
	if err := tree.CheckName("channel", t.channel); err != nil {
		return nil, errkind.Wrap(errkind.Invalid, err)
	}
	for _, a := range f.Agents {
		id, err := workflow.AgentID(a.Name, instance)
		if err != nil {
			return nil, errkind.Wrap(errkind.Invalid, err)
		}
		t.ids, t.names = append(t.ids, id), append(t.names, a.Name)
	}
	if err := t.claim(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			t.close()
			t.dropStore()
			t.unclaim()
		}
	}()
	if err := t.clearStops(); err != nil {
		return nil, err
	}
	if err := t.openStore(ctx); err != nil {
		return nil, err
	}
	if !req.Resumed {
		if err := t.setup(ctx, req.Env); err != nil {
			return nil, err
		}
		if err := t.makeDocuments(ctx); err != nil {
			return nil, err
		}
	}
	for i, a := range f.Agents {
		w, err := watchsetup.Prepare(ctx, t.store, t.agentSettings(req.Watch, a, i), req.WatchHost)
		if err != nil {
			k, _ := errkind.Carried(err)
			return nil, errkind.Wrap(k, fmt.Errorf("agent %s: %w", a.Name, err))
		}
		t.agents = append(t.agents, &teamAgent{id: t.ids[i], name: a.Name, cfg: &w.Config, done: w.Close})
	}
	ok = true
	return t, nil
}

// printWarnings prints what the workflow file asks that cannot be
// honoured in full (workflow.File.Warnings), on w.
func printWarnings(w io.Writer, f *workflow.File) {
	for _, msg := range f.Warnings {
		fmt.Fprintf(w, "collab: warning: %s\n", msg)
	}
}

// clearStops removes the stop files left from an earlier run of this
// instance (which would stop this one at once), or refuses the run when
// one cannot be (the admin's, in the sticky folder).
func (t *team) clearStops() error {
	root, uid := t.m.cfg.Root, os.Geteuid()
	if err := workflow.ClearStop(root, t.file.Name, t.instance, uid); err != nil {
		return errkind.Wrap(errkind.Conflict, err)
	}
	for _, name := range t.names {
		if err := workflow.ClearAgentStop(root, t.file.Name, t.instance, name, uid); err != nil {
			return errkind.Wrap(errkind.Conflict, err)
		}
	}
	return nil
}

// setup runs the setup steps (in the process's environment) and renders
// the kickoff.
func (t *team) setup(ctx context.Context, env func(string) string) error {
	outputs, err := t.file.RunSetup(ctx, nil, t.log)
	if err != nil {
		return errkind.Wrap(errkind.Failed, fmt.Errorf("setup: %w", err))
	}
	if t.file.Kickoff == "" {
		return nil // start: the team waits for the first message
	}
	t.kickoff, err = workflow.Render(t.file.Kickoff, workflow.Vars{
		Outputs: outputs, Env: env, Workflow: t.file.Name, Instance: t.instance,
		Channel: t.channel, Document: t.file.Document(),
	})
	if err != nil {
		return errkind.Wrap(errkind.Invalid, fmt.Errorf("kickoff: %w", err))
	}
	return nil
}

// claim writes the instance's record, status starting, before any setup
// step runs: created without replacing when the instance has none, so of
// two runs started at the same moment one wins and the other is refused;
// an existing record is replaced only when refuseRunning finds it
// neither running nor starting.
func (t *team) claim() error {
	root := t.m.cfg.Root
	t.record = workflow.Record{
		Name: t.file.Name, Instance: t.instance, File: t.file.Path, Host: t.m.cfg.Host, PID: os.Getpid(),
		Started: t.m.cfg.Now().UTC(), Status: workflow.Starting, Agents: t.ids, Channel: t.channel,
	}
	err := workflow.CreateRecord(root, &t.record)
	if !errors.Is(err, fs.ErrExist) {
		return errkind.Wrap(errkind.Failed, err)
	}
	if err := t.m.refuseRunning(t.file.Name, t.instance); err != nil {
		return err
	}
	// The prior record is put back as this account's own (unclaim): only
	// one no other account could have written.
	if prior, err := workflow.ReadRecord(root, t.file.Name, t.instance); err == nil && workflow.CheckRecord(root, &prior, os.Getuid()) == nil {
		t.prior = &prior
	}
	return errkind.Wrap(errkind.Failed, workflow.WriteRecord(root, &t.record))
}

// unclaim undoes claim when the run fails before it starts: the
// instance's previous record is put back (when it was this account's),
// or none is left, so a run that never started leaves no trace in ls.
func (t *team) unclaim() {
	if t.prior != nil {
		workflow.WriteRecord(t.m.cfg.Root, t.prior)
		return
	}
	workflow.RemoveRecord(t.m.cfg.Root, t.file.Name, t.instance)
}

// refuseRunning refuses to run instance of workflow name when its record
// says it is running or starting and ls would not judge it dead. It is
// Invalid, as a bad flag: the command as given will not run (collab's
// exit 2).
func (m *Mount) refuseRunning(name, instance string) error {
	r, err := workflow.ReadRecord(m.cfg.Root, name, instance)
	if err != nil {
		return nil // none (or unreadable: not running as far as anyone can tell)
	}
	if st := m.judge(r); st == workflow.Running || st == workflow.Starting {
		return errkind.New(errkind.Invalid, "instance %s of %s is already %s (pid %d on %s)", instance, name, st, r.PID, r.Host)
	}
	return nil
}

// judge is r's status as ls shows it (workflow.Judge).
func (m *Mount) judge(r workflow.Record) string {
	return workflow.Judge(m.cfg.Root, r, m.cfg.Now(), m.cfg.Host)
}

// close releases what the prepared watchers hold.
func (t *team) close() {
	for _, a := range t.agents {
		if a.done != nil {
			a.done()
			a.done = nil
		}
	}
}

// setStatus writes the record with status.
func (t *team) setStatus(status string) error {
	t.record.Status = status
	if status != workflow.Starting && status != workflow.Running {
		t.record.Finished = t.m.cfg.Now().UTC()
	}
	return errkind.Wrap(errkind.Failed, t.writeRecord())
}

// start writes the record, starts every watcher and waits until each is
// AWAKE. On error the watchers started are stopped.
func (t *team) start(ctx context.Context) error {
	t.started = t.m.cfg.Now()
	t.record.Started = t.started.UTC()
	if err := t.setStatus(workflow.Starting); err != nil {
		return err
	}
	base := context.WithoutCancel(ctx)
	for _, a := range t.agents {
		wctx, cancel := context.WithCancel(base)
		a.cancel, a.ended = cancel, make(chan struct{})
		go func() {
			defer close(a.ended)
			if err := watcher.Run(wctx, *a.cfg); err != nil && !a.stopped.Load() {
				t.mu.Lock()
				t.errs = append(t.errs, fmt.Errorf("%s: %w", a.id, err))
				t.mu.Unlock()
			}
		}()
	}
	if err := t.awaitAwake(ctx); err != nil {
		t.stop()
		return err
	}
	return nil
}

// watcherErr returns the errors of watchers that ended.
func (t *team) watcherErr() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return errkind.Wrap(errkind.Failed, errors.Join(t.errs...))
}

// awaitAwake waits until every agent's presence is AWAKE, written by this
// process since the start.
func (t *team) awaitAwake(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	since := t.started.Add(-time.Millisecond)
	for {
		if err := t.watcherErr(); err != nil {
			return err
		}
		all := true
		for _, id := range t.ids {
			s, err := presence.Read(t.store, id)
			st, ok := s.Time()
			if err != nil || !ok || !strings.EqualFold(s.State, presence.StateAwake) || s.WatcherPID != os.Getpid() || st.Before(since) {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stop stops every watcher (each writes OFFLINE and ends its CLI) and
// waits for them, then closes what they hold.
func (t *team) stop() {
	for _, a := range t.agents {
		if a.cancel != nil {
			a.cancel()
		}
	}
	for _, a := range t.agents {
		if a.ended != nil {
			<-a.ended
		}
	}
	t.close()
}

// stopRequested reports whether the instance's stop file exists, written
// by an account that may stop it (workflow.MayStop), and removes it. One
// written by another account is reported once on the log and ignored. It
// also stops each agent whose own stop file is there, and reports true
// when none is left running.
func (t *team) stopRequested() bool {
	root, uid := t.m.cfg.Root, os.Geteuid()
	stop, refused := workflow.StopRequested(root, t.file.Name, t.instance, uid)
	t.refused(refused)
	if stop {
		return true
	}
	left := 0
	for _, a := range t.agents {
		if a.stopped.Load() {
			continue
		}
		stop, refused := workflow.AgentStopRequested(root, t.file.Name, t.instance, a.name, uid)
		t.refused(refused)
		if stop {
			t.stopAgent(a)
			continue
		}
		left++
	}
	return left == 0
}

// refused reports a stop file the team does not honour, once.
func (t *team) refused(err error) {
	if err != nil && !t.stopRefused {
		t.stopRefused = true
		fmt.Fprintf(t.log, "collab: ignoring a stop request: %v\n", err)
	}
}

// stopAgent stops one agent's watcher (it writes OFFLINE and ends its
// CLI) and records it as stopped; the others run on.
func (t *team) stopAgent(a *teamAgent) {
	a.stopped.Store(true)
	a.cancel()
	<-a.ended
	if a.done != nil {
		a.done()
		a.done = nil
	}
	t.record.Stopped = append(t.record.Stopped, a.id)
	if err := t.writeRecord(); err != nil {
		fmt.Fprintf(t.log, "collab: %s: %v\n", a.id, err)
	}
}

// isStopped reports whether the agent id was stopped on its own.
func (t *team) isStopped(id string) bool { return slices.Contains(t.record.Stopped, id) }
