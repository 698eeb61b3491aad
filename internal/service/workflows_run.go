package service

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/presence"
)

// RunWorkflow runs a team until it is done (see Workflows).
func (m *Mount) RunWorkflow(ctx context.Context, req RunRequest) (*RunResult, error) {
	if req.Timeout <= 0 || req.Quiet <= 0 {
		return nil, errkind.New(errkind.Invalid, "--timeout and --quiet must be positive")
	}
	t, err := m.openTeam(ctx, &req.TeamRequest, true)
	if err != nil {
		return nil, err
	}
	defer t.dropStore()
	// What lands from now on, the kickoff included, is followed, in the
	// tree the team talks in (a memory team's own).
	fctx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	seen, err := t.sm.followSeen(fctx, t.channel)
	if err != nil {
		t.close()
		return nil, err
	}
	if err := t.start(ctx); err != nil {
		return nil, err
	}
	res, status, runErr := t.follow(ctx, seen, &req)
	stopFollow()
	t.stop()
	if werr := t.watcherErr(); werr != nil && runErr == nil {
		status, runErr = workflow.Failed, werr
	}
	if err := t.setStatus(status); err != nil && runErr == nil {
		runErr = err
	}
	return res, runErr
}

// runState is what RunWorkflow tracks of the conversation.
type runState struct {
	last    *channel.Message
	lastAt  time.Time                   // when something last happened
	pending map[string]*channel.Message // addressed to one of the agents, not final for all
	failed  bool                        // a job failed
	refused bool                        // the last message was refused (or is a guard notice)
}

// followed is what Follow handed on at once: new messages, or a file it
// passed over.
type followed struct {
	msgs  []channel.Message
	skips []channel.Skip
}

// followSeen follows channel ch from now (Follow, looking each runPoll)
// until ctx ends, handing on what it finds; it returns once the position
// is taken.
func (m *Mount) followSeen(ctx context.Context, ch string) (<-chan followed, error) {
	out, started, failed := make(chan followed), make(chan struct{}), make(chan error, 1)
	hand := func(f followed) error {
		select {
		case out <- f:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	go func() {
		failed <- m.Follow(ctx, FollowRequest{Channel: ch, Poll: runPoll, Started: func() { close(started) },
			Skipped: func(s channel.Skip) { hand(followed{skips: []channel.Skip{s}}) }},
			func(msgs []channel.Message) error { return hand(followed{msgs: msgs}) })
	}()
	select {
	case <-started:
		return out, nil
	case err := <-failed:
		return nil, err
	}
}

// runPoll is how often a run looks at its channel and judges its team.
const runPoll = 250 * time.Millisecond

// follow posts the kickoff and takes what the channel's follower hands
// on until the team is done, the timeout passes, ctx is done or a stop
// file appears. It returns the result (when the run got that far), the
// status for the record, and the error.
func (t *team) follow(ctx context.Context, seen <-chan followed, req *RunRequest) (*RunResult, string, error) {
	if err := t.setStatus(workflow.Running); err != nil {
		return nil, workflow.Failed, err
	}
	if _, err := t.postKickoff(ctx); err != nil {
		return nil, workflow.Failed, err
	}
	st := &runState{lastAt: time.Now(), pending: map[string]*channel.Message{}}
	deadline := time.After(req.Timeout)
	tick := time.NewTicker(runPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, workflow.Stopped, errkind.Wrap(errkind.Failed, ctx.Err())
		case <-deadline:
			return t.result(st, workflow.Timeout), workflow.Timeout, errkind.New(errkind.Timeout, "not done after %v", req.Timeout)
		case f := <-seen:
			if err := t.take(f, st, req.Seen); err != nil {
				return nil, workflow.Failed, err
			}
			continue
		case <-tick.C:
		}
		if t.stopRequested() {
			return nil, workflow.Stopped, errkind.New(errkind.Failed, "stopped by collab stop")
		}
		if err := t.watcherErr(); err != nil {
			return nil, workflow.Failed, err
		}
		if err := t.takeWaiting(seen, st, req.Seen); err != nil {
			return nil, workflow.Failed, err
		}
		busy := t.judge(st)
		if !busy && time.Since(st.lastAt) >= req.Quiet {
			return t.done(st)
		}
		if busy {
			st.lastAt = time.Now() // quiet counts from the last work seen
		}
	}
}

// takeWaiting takes what the follower has ready, so that the team is
// judged on every message found so far.
func (t *team) takeWaiting(seen <-chan followed, st *runState, fn func(string, []channel.Message, []channel.Skip, *signing.Verifier) error) error {
	for {
		select {
		case f := <-seen:
			if err := t.take(f, st, fn); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// take records what the follower found in st and hands it to fn.
func (t *team) take(f followed, st *runState, fn func(string, []channel.Message, []channel.Skip, *signing.Verifier) error) error {
	if fn != nil {
		if err := fn(t.channel, f.msgs, f.skips, t.verifier()); err != nil {
			return errkind.Wrap(errkind.Failed, err)
		}
	}
	for i := range f.msgs {
		m := &f.msgs[i]
		st.last, st.lastAt = m, time.Now()
		if !delivery.IsNotice(m) && !m.IsDeliveryReport() && t.addressed(m) {
			st.pending[m.Key()] = m
		}
	}
	return nil
}

// done is the end of a run whose team is done: Done, or Failed when a
// job failed or a guard refused the last message.
func (t *team) done(st *runState) (*RunResult, string, error) {
	if st.last != nil && delivery.IsNotice(st.last) {
		st.refused = true
	}
	switch {
	case st.failed:
		return t.result(st, workflow.Failed), workflow.Failed, errkind.New(errkind.Failed, "a job failed")
	case st.refused:
		return t.result(st, workflow.Failed), workflow.Failed, errkind.New(errkind.Failed, "a guard refused the last message")
	}
	return t.result(st, workflow.Done), workflow.Done, nil
}

// addressed reports whether m is for one of the team's agents.
func (t *team) addressed(m *channel.Message) bool {
	for i, id := range t.ids {
		if m.IsForAny(id, t.names[i]) {
			return true
		}
	}
	return false
}

// judge updates st from the delivery states of the pending messages and
// the agents' presence, and reports whether the team is still at work: a
// message held (seen, claimed, running) by one of its agents, or an agent
// (not stopped on its own) not AWAKE and idle with an empty backlog.
func (t *team) judge(st *runState) bool {
	root, host := t.store, t.m.cfg.Host
	busy := false
	for key, m := range st.pending {
		final := true
		for i, id := range t.ids {
			if !m.IsForAny(id, t.names[i]) || t.isStopped(id) {
				continue
			}
			a := delivery.StateFor(root, t.channel, m, id, delivery.Options{Host: host})
			switch {
			case a.State == delivery.Failed:
				st.failed = true
			case a.State == delivery.Refused && st.last != nil && st.last.Key() == key:
				st.refused = true
			case delivery.Final(a.State):
			case a.State == delivery.Waiting:
				// Not (yet) taken: the watcher skipped it (a reply it
				// awaited) or has not looked; the quiet period decides.
				final = false
			default:
				final, busy = false, true
			}
		}
		if final {
			delete(st.pending, key)
		}
	}
	now := time.Now()
	for _, id := range t.ids {
		if t.isStopped(id) {
			continue
		}
		s, err := presence.Read(root, id)
		if err != nil || s.Effective(now, 0, host, nil) != presence.AwakeIdle || s.Backlog != 0 {
			busy = true
		}
	}
	return busy
}

// result is the run's result: the last message, the documents changed
// and each agent's jobs since the start.
func (t *team) result(st *runState, status string) *RunResult {
	root := t.store
	res := &RunResult{Workflow: t.file.Name, Instance: t.instance, Channel: t.channel, Status: status,
		Last: st.last, Documents: []string{}}
	if !t.file.Context.Off {
		res.Documents = changedDocs(root, t.channel, t.started)
	}
	for i, id := range t.ids {
		a := AgentResult{Name: t.names[i], Agent: id}
		js, _ := jobs.List(root, id) // at most jobs.Keep finished, and the running
		for _, j := range js {
			if j.Started.Before(t.started) {
				continue
			}
			a.Jobs++
			if j.Status == jobs.Failed {
				a.Failed++
			}
			a.CostUSD += j.CostUSD
			a.Tokens += j.Usage.Tokens()
		}
		res.Agents = append(res.Agents, a)
	}
	return res
}

// maxDocs bounds the documents changedDocs looks at.
const maxDocs = 1000

// changedDocs lists the files under ROOT/docs/CHANNEL modified since
// start, relative to it (at most maxDocs files are looked at).
func changedDocs(root tree.Root, ch string, since time.Time) []string {
	dir := root.Docs(ch)
	out := []string{}
	n := 0
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || n >= maxDocs {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name()[0] == '.' {
			return nil
		}
		n++
		if fi, err := d.Info(); err == nil && !fi.ModTime().Before(since) {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out
}
