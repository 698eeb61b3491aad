package main

// The running of a workflow's team (collab run, start, stop, ls): one
// watcher per agent in this process, the instance record and the stop
// file. The file format is package workflow's.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// wfDead is the status ls judges a running record whose process or
// agents are gone; it is never written.
const wfDead = workflow.Dead

// judge is the record's status as ls shows it (workflow.Judge).
func judge(root tree.Root, r workflow.Record, now time.Time) string {
	return workflow.Judge(root, r, now, hostname())
}

// teamFlags are the flags run and start share.
type teamFlags struct {
	instance      *string
	agent         *string
	verbose       *bool
	root          *string
	keyring       *string
	allowWritable *bool
	poll          *time.Duration
	heartbeat     *time.Duration
	grace         *time.Duration
	logLevel      *string
	nats          *natsFlags
}

func addTeamFlags(fs *pflag.FlagSet) *teamFlags {
	return &teamFlags{
		instance:      fs.String("instance", "", "the instance's name (default: MMDD-HHMM-xx from the time)"),
		agent:         agentFlag(fs, "", "who posts the kickoff", true),
		verbose:       fs.Bool("verbose", false, "also show the watchers' logs on standard error"),
		keyring:       keyringFlag(fs),
		allowWritable: fs.Bool("allow-writable-keyring", false, "accept a keyring this account can write (a single-account setup)"),
		poll:          fs.Duration("poll", watcher.DefaultPoll, "the watchers' poll interval"),
		heartbeat:     fs.Duration("heartbeat", watcher.DefaultHeartbeat, "the watchers' presence heartbeat interval"),
		grace:         fs.Duration("grace", watcher.DefaultGrace, "on stop, how long a running CLI may finish"),
		logLevel:      fs.String("log-level", defaultLogLevel, "the watchers' log level: debug, info, warn or error"),
		nats:          addNATSFlags(fs),
		root:          rootFlag(fs),
	}
}

// team is a workflow instance being run by this process.
type team struct {
	file     *workflow.File
	root     tree.Root
	instance string
	channel  string
	ids      []string // agent ids, in file order
	names    []string // the agents' names, as the author wrote them
	kickoff  string
	from     string // who posts the kickoff
	record   workflow.Record
	prepared []*preparedWatch
	started  time.Time

	cancel context.CancelFunc
	wg     sync.WaitGroup
	prior  *workflow.Record // the record claim replaced, if any
	mu     sync.Mutex
	errs   []error // watchers that returned an error

	stderr      io.Writer
	stopRefused bool // a refused stop file was reported
}

// newTeam loads the workflow, runs its setup and renders its kickoff:
// everything that may fail before an agent starts. A setup failure is
// exit 1, a bad file or an unknown variable exit 2.
func newTeam(ctx context.Context, cmd, path string, tf *teamFlags, getenv env, stderr io.Writer) (*team, error) {
	root := tree.Resolve(*tf.root, getenv)
	f, err := workflow.Load(path)
	if err != nil {
		return nil, usageErrorf("%s: %v", cmd, err)
	}
	instance := *tf.instance
	if instance == "" {
		instance = workflow.NewInstance(time.Now())
	}
	if err := workflow.CheckInstance(instance); err != nil {
		return nil, usageErrorf("%s: --instance: %v", cmd, err)
	}
	from, err := actingAgent(ctx, cmd, "sender", *tf.agent)
	if err != nil {
		return nil, err
	}
	t := &team{file: f, root: root, instance: instance, channel: f.Channel(instance), from: from, stderr: stderr}
	if err := tree.CheckName("channel", t.channel); err != nil {
		return nil, usageErrorf("%s: %v", cmd, err)
	}
	for _, a := range f.Agents {
		id, err := workflow.AgentID(a.Name, instance)
		if err != nil {
			return nil, usageErrorf("%s: %v", cmd, err)
		}
		t.ids, t.names = append(t.ids, id), append(t.names, a.Name)
	}
	if err := t.claim(cmd); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			t.unclaim()
		}
	}()
	// A stop file left from an earlier run of this instance would stop
	// this one at once: removed now, or the run refused when it cannot be
	// (the admin's, in the sticky folder).
	if err := workflow.ClearStop(t.root, t.file.Name, t.instance, os.Geteuid()); err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	// Resumed (collab resume): the kickoff was posted, so neither it nor
	// the setup that renders it runs again.
	if getenv(envWorkflowResume) != "1" {
		outputs, err := f.RunSetup(ctx, nil, stderr) // the process's environment
		if err != nil {
			return nil, fmt.Errorf("%s: setup: %w", cmd, err)
		}
		t.kickoff, err = workflow.Render(f.Kickoff, workflow.Vars{
			Outputs: outputs, Env: getenv, Workflow: f.Name, Instance: instance,
			Channel: t.channel, Document: f.Document(),
		})
		if err != nil {
			return nil, usageErrorf("%s: kickoff: %v", cmd, err)
		}
	}
	logs := io.Discard
	if *tf.verbose {
		logs = stderr
	}
	for i, a := range f.Agents {
		s := agentSettings(a, t.ids[i], t.channel)
		s.Keyring, s.AllowWritableKeyring, s.NATS = *tf.keyring, *tf.allowWritable, tf.nats
		s.Poll, s.Heartbeat, s.Grace, s.LogLevel = *tf.poll, *tf.heartbeat, *tf.grace, *tf.logLevel
		p, err := prepareWatch(ctx, root, s, getenv, logs)
		if err != nil {
			t.close()
			var ee *exitError
			if errors.As(err, &ee) {
				return nil, &exitError{code: ee.code, msg: fmt.Sprintf("%s: agent %s: %s", cmd, a.Name, ee.msg)}
			}
			return nil, fmt.Errorf("%s: agent %s: %w", cmd, a.Name, err)
		}
		t.prepared = append(t.prepared, p)
	}
	ok = true
	return t, nil
}

// claim writes the instance's record, status starting, before any setup
// step runs: created without replacing when the instance has none, so of
// two runs started at the same moment one wins and the other is refused
// (exit 2); an existing record is replaced only when refuseRunning finds
// it neither running nor starting.
func (t *team) claim(cmd string) error {
	t.record = workflow.Record{
		Name: t.file.Name, Instance: t.instance, File: t.file.Path, Host: hostname(), PID: os.Getpid(),
		Started: time.Now().UTC(), Status: workflow.Starting, Agents: t.ids, Channel: t.channel,
	}
	err := workflow.CreateRecord(t.root, &t.record)
	if !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := refuseRunning(t.root, cmd, t.file.Name, t.instance); err != nil {
		return err
	}
	// The prior record is put back as this account's own (unclaim): only
	// one no other account could have written.
	if prior, err := workflow.ReadRecord(t.root, t.file.Name, t.instance); err == nil && workflow.CheckRecord(t.root, &prior, getuid()) == nil {
		t.prior = &prior
	}
	return workflow.WriteRecord(t.root, &t.record)
}

// unclaim undoes claim when the run fails before it starts (a setup step
// failed, the kickoff did not render, an agent could not be prepared):
// the instance's previous record is put back (when it was this
// account's, writable by no one else), or none is left, so a run that
// never started leaves no trace in ls.
func (t *team) unclaim() {
	if t.prior != nil {
		workflow.WriteRecord(t.root, t.prior)
		return
	}
	workflow.RemoveRecord(t.root, t.file.Name, t.instance)
}

// refuseRunning refuses (exit 2) to run instance of workflow name when
// its record says it is running or starting and ls would not judge it
// dead: before any setup step runs.
func refuseRunning(root tree.Root, cmd, name, instance string) error {
	r, err := workflow.ReadRecord(root, name, instance)
	if err != nil {
		return nil // none (or unreadable: not running as far as anyone can tell)
	}
	if st := judge(root, r, time.Now()); st == workflow.Running || st == workflow.Starting {
		return usageErrorf("%s: instance %s of %s is already %s (pid %d on %s)", cmd, instance, name, st, r.PID, r.Host)
	}
	return nil
}

// agentSettings are the watch settings of workflow agent a, whose id is
// id, in channel ch: a key left out keeps the zero value, the default.
func agentSettings(a workflow.Agent, id, ch string) watchSettings {
	s := watchSettings{
		Agent: id, Aliases: []string{a.Name}, Channels: []string{ch},
		CLI: a.CLI, Cmd: a.Cmd, CLIArgs: a.CLIArgs, Model: a.Model,
		SessionScope: a.SessionScope, Role: a.SystemPrompt, Memory: a.Memory,
		PromptTemplate: a.PromptTemplate, Workdir: a.Workdir, Trust: a.Trust,
	}
	set := func(dst *time.Duration, p *time.Duration) {
		if p != nil {
			*dst = *p
		}
	}
	set(&s.SessionTTL, a.SessionTTL)
	set(&s.Timeout, a.Timeout)
	setInt := func(dst *int, p *int) {
		if p != nil {
			*dst = *p
		}
	}
	setInt(&s.MaxTurns, a.MaxTurns)
	setInt(&s.MaxHops, a.MaxHops)
	setInt(&s.Rate, a.Rate)
	setInt(&s.PairRate, a.PairRate)
	if a.Context != nil {
		s.Context = cmp.Or(*a.Context, -1) // context: 0 is none, as --context 0
	}
	if a.BudgetUSD != nil {
		s.BudgetUSD = *a.BudgetUSD
	}
	if a.BudgetTokens != nil {
		s.BudgetTokens = *a.BudgetTokens
	}
	if a.PostErrors != nil {
		s.PostErrors = *a.PostErrors
	}
	if a.MCP != nil {
		s.MCP = *a.MCP
	}
	return s
}

// close releases what the prepared watchers hold.
func (t *team) close() {
	for _, p := range t.prepared {
		p.Close()
	}
	t.prepared = nil
}

// setStatus writes the record with status.
func (t *team) setStatus(status string) error {
	t.record.Status = status
	if status != workflow.Starting && status != workflow.Running {
		t.record.Finished = time.Now().UTC()
	}
	return workflow.WriteRecord(t.root, &t.record)
}

// start writes the record, starts every watcher and waits until each is
// AWAKE. On error the watchers started are stopped.
func (t *team) start(ctx context.Context) error {
	t.started = time.Now()
	t.record.Started = t.started.UTC()
	if err := t.setStatus(workflow.Starting); err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	t.cancel = cancel
	for _, p := range t.prepared {
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			if err := watcher.Run(wctx, p.Config); err != nil {
				t.mu.Lock()
				t.errs = append(t.errs, fmt.Errorf("%s: %w", p.Config.Agent, err))
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
	return errors.Join(t.errs...)
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
			s, err := presence.Read(t.root, id)
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
// waits for them, then closes their logs.
func (t *team) stop() {
	if t.cancel != nil {
		t.cancel()
	}
	t.wg.Wait()
	t.close()
}

// postKickoff posts the rendered kickoff into the instance's channel.
func (t *team) postKickoff(getenv env) (*channel.Message, error) {
	signer, err := loadSigner("", t.from, getenv)
	if err != nil {
		return nil, err
	}
	m := &channel.Message{SessionID: t.channel, From: t.from, To: channel.Broadcast, Content: channel.Content{Text: t.kickoff}}
	m.Metadata.Host = hostname()
	m.Metadata.Hops = watcher.RunHops(getenv) + 1
	w := &channel.Writer{Root: t.root, Signer: signer}
	if err := w.Post(m); err != nil {
		return nil, fmt.Errorf("kickoff: %w", err)
	}
	return m, nil
}

// stopRequested reports whether the instance's stop file exists, written
// by an account that may stop it (workflow.MayStop), and removes it. One
// written by another account is reported once on stderr and ignored.
func (t *team) stopRequested() bool {
	stop, refused := workflow.StopRequested(t.root, t.file.Name, t.instance, os.Geteuid())
	if refused != nil && !t.stopRefused {
		t.stopRefused = true
		fmt.Fprintf(t.stderr, "collab: ignoring a stop request: %v\n", refused)
	}
	return stop
}
