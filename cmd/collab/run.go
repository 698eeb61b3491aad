package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/presence"
)

// defaultQuiet is how long nothing new may happen in the channel, with
// every agent idle, before collab run judges the team done.
const defaultQuiet = 3 * time.Second

func runRun(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab run FILE [--instance I] [--timeout D] [--json] [--verbose] [--agent A]

Run the workflow FILE once: run its setup steps, start one watcher per
agent in this process, post the kickoff as --agent into the instance's
channel, print the conversation as it happens, and stop when the team is
done: no job running, no message addressed to one of its agents left
unanswered, and nothing new in the channel for --quiet. Then print the
result (the last message, the documents changed, each agent's jobs, cost
and tokens) and stop every watcher.

Exit codes: 0 done; 1 a setup step failed, a job failed, or a guard
refused the last message; 2 a bad file or an unknown variable (nothing
started); 3 --timeout passed.

Flags:
`)
		fs.PrintDefaults()
	}
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long (exit 3)")
	quiet := fs.Duration("quiet", defaultQuiet, "how long the channel must be quiet, every agent idle, to be done")
	asJSON := fs.Bool("json", false, "print the messages and then the result as JSON lines")
	tf := addTeamFlags(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("run: want one workflow FILE (see 'collab run --help')")
	}
	if *timeout <= 0 || *quiet <= 0 {
		return usageErrorf("run: --timeout and --quiet must be positive")
	}
	t, err := newTeam(ctx, "run", fs.Arg(0), tf, getenv, stderr)
	if err != nil {
		return err
	}
	r, err := channel.NewReader(t.root, t.channel, channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		t.close()
		return err
	}
	if err := r.SeekEnd(); err != nil {
		t.close()
		return err
	}
	if err := t.start(ctx); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	status, runErr := t.follow(ctx, r, *timeout, *quiet, getenv, *asJSON, stdout, stderr)
	t.stop()
	if werr := t.watcherErr(); werr != nil && runErr == nil {
		status, runErr = workflow.Failed, &exitError{code: exitFailure, msg: "run: " + werr.Error()}
	}
	if err := t.setStatus(status); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// runState is what collab run tracks of the conversation.
type runState struct {
	last    *channel.Message
	lastAt  time.Time                   // when something last happened
	pending map[string]*channel.Message // addressed to one of the agents, not final for all
	failed  bool                        // a job failed
	refused bool                        // the last message was refused (or is a guard notice)
}

// follow posts the kickoff and prints the channel until the team is done,
// the timeout passes, ctx is done or a stop file appears. It returns the
// status for the record, and the error that sets the exit code.
func (t *team) follow(ctx context.Context, r *channel.Reader, timeout, quiet time.Duration, getenv env, asJSON bool, stdout, stderr io.Writer) (string, error) {
	if err := t.setStatus(workflow.Running); err != nil {
		return workflow.Failed, err
	}
	if _, err := t.postKickoff(getenv); err != nil {
		return workflow.Failed, err
	}
	p := printer{w: stdout, errw: stderr, json: asJSON, channel: t.channel,
		verifier: t.prepared[0].Config.Verifier}
	st := &runState{lastAt: time.Now(), pending: map[string]*channel.Message{}}
	deadline := time.After(timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return workflow.Stopped, ctx.Err()
		case <-deadline:
			t.result(st, workflow.Timeout, asJSON, stdout)
			return workflow.Timeout, &exitError{code: exitNothing, msg: fmt.Sprintf("run: not done after %v", timeout)}
		case <-tick.C:
		}
		if t.stopRequested() {
			return workflow.Stopped, &exitError{code: exitFailure, msg: "run: stopped by collab stop"}
		}
		if err := t.watcherErr(); err != nil {
			return workflow.Failed, err
		}
		msgs, skips, err := r.Scan()
		if err != nil {
			fmt.Fprintf(stderr, "collab: %v\n", err)
			continue
		}
		p.skips(skips)
		verdicts := p.verdicts(msgs)
		for i := range msgs {
			m := &msgs[i]
			if err := p.message(m, verdicts[i]); err != nil {
				return workflow.Failed, err
			}
			st.last, st.lastAt = m, time.Now()
			if !delivery.IsNotice(m) && t.addressed(m) {
				st.pending[m.Key()] = m
			}
		}
		busy := t.judge(st)
		if !busy && time.Since(st.lastAt) >= quiet {
			if st.last != nil && delivery.IsNotice(st.last) {
				st.refused = true
			}
			status, code := workflow.Done, 0
			if st.failed || st.refused {
				status, code = workflow.Failed, exitFailure
			}
			t.result(st, status, asJSON, stdout)
			if code != 0 {
				return status, &exitError{code: code, msg: "run: " + map[bool]string{true: "a job failed", false: "a guard refused the last message"}[st.failed]}
			}
			return status, nil
		}
		if busy {
			st.lastAt = time.Now() // quiet counts from the last work seen
		}
	}
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
// not AWAKE and idle with an empty backlog.
func (t *team) judge(st *runState) bool {
	busy := false
	for key, m := range st.pending {
		final := true
		for i, id := range t.ids {
			if !m.IsForAny(id, t.names[i]) {
				continue
			}
			a := delivery.StateFor(t.root, t.channel, m, id, delivery.Options{Host: hostname()})
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
		s, err := presence.Read(t.root, id)
		if err != nil || s.Effective(now, 0, hostname(), nil) != presence.AwakeIdle || s.Backlog != 0 {
			busy = true
		}
	}
	return busy
}

// runResult is what collab run prints at the end.
type runResult struct {
	Workflow  string           `json:"workflow"`
	Instance  string           `json:"instance"`
	Channel   string           `json:"channel"`
	Status    string           `json:"status"`
	Last      *channel.Message `json:"last_message,omitempty"`
	Documents []string         `json:"documents"`
	Agents    []agentResult    `json:"agents"`
}

type agentResult struct {
	Name    string  `json:"name"`
	Agent   string  `json:"agent"`
	Jobs    int     `json:"jobs"`
	Failed  int     `json:"failed"`
	CostUSD float64 `json:"cost_usd"`
	Tokens  int64   `json:"tokens"`
}

// result prints the run's result.
func (t *team) result(st *runState, status string, asJSON bool, stdout io.Writer) {
	res := runResult{Workflow: t.file.Name, Instance: t.instance, Channel: t.channel, Status: status,
		Last: st.last, Documents: changedDocs(t.root, t.channel, t.started)}
	for i, id := range t.ids {
		a := agentResult{Name: t.names[i], Agent: id}
		js, _ := jobs.List(t.root, id) // at most jobs.Keep finished, and the running
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
	if asJSON {
		data, _ := json.Marshal(map[string]any{"result": res})
		fmt.Fprintf(stdout, "%s\n", data)
		return
	}
	fmt.Fprintf(stdout, "── %s@%s: %s\n", t.file.Name, t.instance, status)
	if st.last != nil {
		fmt.Fprintf(stdout, "last message: %s from %s\n", st.last.ID, tree.Printable(workflow.Display(st.last.From)))
	}
	if len(res.Documents) > 0 {
		fmt.Fprintf(stdout, "documents changed: %s\n", joinPrintable(res.Documents))
	}
	for _, a := range res.Agents {
		fmt.Fprintf(stdout, "%-20s jobs %d (failed %d)  $%.4f  %d tokens\n", workflow.Display(a.Agent), a.Jobs, a.Failed, a.CostUSD, a.Tokens)
	}
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

// joinPrintable joins names for a terminal.
func joinPrintable(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += tree.Printable(n)
	}
	return s
}
