package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/live"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// Live sessions (collab watch --live): the real CLIs (found as the
// tests find them: $COLLAB_CLI_BIN_DIR, /tmp/npmcli/node_modules/.bin,
// PATH) against fakemodel, which answers at once, under an in-process
// watcher as collab watch runs it (poll 1 s, fsnotify, guards off). Each
// message is posted once the reply to the one before has landed. One
// process per message, then --live, each over liveMessages messages after
// one warm-up (the --live warm-up starts the process).
//
// The overhead of a message is from Writer.Post returning to the reply's
// file being seen (polled every 2 ms), less the model's own time: the
// union of the spans from each model call's arrival at fakemodel to the
// end of its answer (fakemodel.Request.Arrived, Ended). The tokens of the
// tenth message of the conversation (the warm-up is the first) are the
// bytes of the request bodies of the model calls made for it, over 4
// (fakemodel's count_tokens estimate): the whole input the API is sent,
// system prompt and tool definitions included. The ratio is the --live
// overhead p50 over the per-message one, run by run.
//
// Each run also prints where a message's time goes (the medians): ours
// before the call (Post returning to the watcher's call of the Runner or
// the live session's Turn), the CLI before the model (that call to the
// first model call), the model, the CLI after the model (the end of the
// last answer to the call's return), and ours after the call (that return
// to the reply seen). The time the call spent in its OnEvent and OnStart
// (which record the job: ours, inside the call) is counted apart from the
// CLI's, before and after the model.

const liveMessages = 20

// liveCLI is one CLI the live rows measure: its name in the figures and
// the watcher, fakemodel's name for it, and its adapter and live starter
// for a CLI fakemodel set up.
type liveCLI struct {
	name, fake string
	runner     func(c *fakemodel.CLI) (watcher.Runner, live.Starter)
}

var (
	liveClaudeCLI = liveCLI{"claude", fakemodel.ClaudeCode, func(c *fakemodel.CLI) (watcher.Runner, live.Starter) {
		a := &claude.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env}
		return a, &live.Claude{Adapter: a}
	}}
	liveCodexCLI = liveCLI{"codex", fakemodel.CodexCLI, func(c *fakemodel.CLI) (watcher.Runner, live.Starter) {
		a := &codex.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env}
		return a, &live.Codex{Adapter: a} // one codex exec per message, or one codex app-server
	}}
	liveGeminiCLI = liveCLI{"gemini", fakemodel.GeminiCLI, func(c *fakemodel.CLI) (watcher.Runner, live.Starter) {
		a := &gemini.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env}
		return a, &live.Gemini{Adapter: a} // ACP
	}}
)

func (b *bench) liveClaude(ctx context.Context) []Figure { return b.liveRows(ctx, liveClaudeCLI) }
func (b *bench) liveCodex(ctx context.Context) []Figure  { return b.liveRows(ctx, liveCodexCLI) }
func (b *bench) liveGemini(ctx context.Context) []Figure { return b.liveRows(ctx, liveGeminiCLI) }

// liveTenth is the message whose tokens are counted: the tenth of the
// conversation, the warm-up being the first.
const liveTenth = 9

// liveRows measures l one process per message, then --live.
func (b *bench) liveRows(ctx context.Context, l liveCLI) []Figure {
	tokNote := "request body bytes / 4, summed over the model calls made for the tenth message of the conversation"
	specs := [2][3]spec{{
		{name: l.name + ", one process per message: overhead (message → reply less model time) p50", unit: "ms"},
		{name: l.name + ", one process per message: overhead p99", unit: "ms"},
		{name: l.name + ", one process per message: tokens sent for the 10th message", unit: "tokens", note: tokNote},
	}, {
		{name: l.name + " --live: overhead (message → reply less model time) p50", unit: "ms", max: 150},
		{name: l.name + " --live: overhead p99", unit: "ms"},
		{name: l.name + " --live: tokens sent for the 10th message", unit: "tokens", note: tokNote},
	}}
	var figs []Figure
	var p50s [2][]float64
	var errs [2]error
	for i, on := range []bool{false, true} {
		what := l.name + " live=" + fmt.Sprint(on)
		vals, err := b.repeat(ctx, what, 3, func(run int) ([]float64, error) {
			r, err := b.liveRun(ctx, l, on, run)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(b.progress, "   %s run %d/%d: %s\n", what, run+1, b.runs, r.breakdown())
			slices.Sort(r.overhead)
			return []float64{ms(percentile(r.overhead, 50)), ms(percentile(r.overhead, 99)), float64(r.tokens)}, nil
		})
		p50s[i], errs[i] = vals[0], err
		for k := range 3 {
			figs = append(figs, specs[i][k].figure(vals[k], err))
		}
	}
	var ratios []float64
	for k := range min(len(p50s[0]), len(p50s[1])) {
		ratios = append(ratios, 100*p50s[1][k]/p50s[0][k])
	}
	figs = append(figs, spec{name: l.name + " --live overhead p50 / one process per message's", unit: "%", max: 10}.
		figure(ratios, errors.Join(errs[0], errs[1])))
	return figs
}

// liveResult is what a run measured.
type liveResult struct {
	overhead []time.Duration // per message: message → reply less the model's time
	tokens   int             // sent for the tenth message
	// parts are, per message, the spans of breakdown's names.
	parts [len(liveParts)][]time.Duration
}

// liveParts name the spans of a message's time, in order.
var liveParts = [...]string{"ours before the call", "job records before the model", "CLI before the model", "model",
	"CLI after the model", "job records after the model", "ours after the call"}

// breakdown is the median of each part.
func (r *liveResult) breakdown() string {
	var out []string
	for i, name := range liveParts {
		ds := slices.Sorted(slices.Values(r.parts[i]))
		if len(ds) > 0 {
			out = append(out, fmt.Sprintf("%s %.1f ms", name, ms(percentile(ds, 50))))
		}
	}
	return "p50 of " + strings.Join(out, ", ")
}

// liveRun answers liveMessages messages (and a warm-up) with l's CLI,
// live or not, and returns what it measured.
func (b *bench) liveRun(ctx context.Context, l liveCLI, on bool, run int) (*liveResult, error) {
	path, err := fakemodel.FindCLI(l.fake)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(b.dir, fmt.Sprintf("live-%s-%v-%d", l.name, on, run))
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	srv := fakemodel.Start(nil)
	defer srv.Close()
	c, err := srv.Setup(l.fake, path, base)
	if err != nil {
		return nil, err
	}
	root := tree.Root(filepath.Join(base, "tree"))
	runner, starter := l.runner(c)
	calls := &callLog{}
	cfg := watcher.Config{
		Root: root, Agent: benchAgent, Channels: []string{benchChannel}, Runner: timedRunner{runner, calls}, CLI: l.name, Workdir: c.Dir,
		Timeout: time.Minute, Poll: latencyPoll, Grace: 5 * time.Second, Rate: -1, PairRate: -1,
		Wakers: []watcher.Waker{fswake.Channels{Root: root}},
	}
	if on {
		pool := live.NewPool(timedStarter{starter, calls}, live.Config{})
		defer pool.Close() // after the watcher has stopped
		cfg.Live = pool
	}
	return liveAnswer(ctx, root, cfg, srv, calls)
}

// liveAnswer runs a watcher of cfg on root, posts liveMessages messages
// (and a warm-up), each once the one before has its reply, and measures
// each one's time against srv's model calls and the CLI calls.
func liveAnswer(ctx context.Context, root tree.Root, cfg watcher.Config, srv *fakemodel.Server, calls *callLog) (*liveResult, error) {
	if err := os.MkdirAll(root.Channel(benchChannel), 0o755); err != nil {
		return nil, err
	}
	logger, closeLog, err := watchLogger(root, benchAgent)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	cfg.Logger = logger
	stop, err := startWatcher(ctx, cfg, func() bool { _, err := presence.Read(root, benchAgent); return err == nil })
	if err != nil {
		return nil, err
	}
	defer stop()
	w := &channel.Writer{Root: root}
	r := &liveResult{}
	for i := range liveMessages + 1 {
		m := channel.Message{SessionID: benchChannel, From: senderAgent, To: benchAgent, Content: channel.Content{Text: fmt.Sprintf("question %d", i)}}
		seenReqs, mark := len(srv.Requests()), calls.mark()
		if err := w.Post(&m); err != nil {
			return nil, err
		}
		posted := time.Now()
		if err := awaitReply(ctx, root, m.ID); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		seen := time.Now()
		reqs := srv.Requests()[seenReqs:]
		if i == liveTenth {
			for _, q := range reqs {
				r.tokens += len(q.Body) / 4
			}
		}
		if i > 0 {
			cs, evs := calls.since(mark)
			r.note(posted, seen, reqs, cs, evs)
		}
	}
	return r, nil
}

// note adds one message's figures: posted to seen, the model calls made
// for it, and the CLI calls and their events.
func (r *liveResult) note(posted, seen time.Time, reqs []fakemodel.Request, calls, events []span) {
	var model []span
	for _, q := range reqs {
		if !q.Ended.IsZero() {
			model = append(model, span{maxTime(q.Arrived, posted), minTime(q.Ended, seen)})
		}
	}
	busy := union(model)
	r.overhead = append(r.overhead, seen.Sub(posted)-busy)
	if len(calls) != 1 || len(model) == 0 {
		return // a redone turn, or no model call: no breakdown
	}
	call := calls[0]
	first, last := model[0].from, model[0].to
	for _, m := range model {
		first, last = minTime(first, m.from), maxTime(last, m.to)
	}
	evBefore := union(clip(events, call.from, first))
	evAfter := union(clip(events, last, call.to))
	for i, d := range []time.Duration{call.from.Sub(posted), evBefore, first.Sub(call.from) - evBefore, busy,
		call.to.Sub(last) - evAfter, evAfter, seen.Sub(call.to)} {
		r.parts[i] = append(r.parts[i], d)
	}
}

// clip is the parts of spans between from and to.
func clip(spans []span, from, to time.Time) []span {
	var out []span
	for _, s := range spans {
		s = span{maxTime(s.from, from), minTime(s.to, to)}
		if s.to.After(s.from) {
			out = append(out, s)
		}
	}
	return out
}

// span is a time from … to.
type span struct{ from, to time.Time }

// union is the time covered by spans.
func union(spans []span) time.Duration {
	s := slices.SortedFunc(slices.Values(spans), func(a, b span) int { return a.from.Compare(b.from) })
	var total time.Duration
	var end time.Time
	for _, x := range s {
		if x.from.Before(end) {
			x.from = end
		}
		if x.to.After(x.from) {
			total += x.to.Sub(x.from)
			end = x.to
		}
	}
	return total
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// callLog records the watcher's calls of the CLI (Runner.Run, or a live
// session's Turn) and of their OnEvent and OnStart, which record the job
// (ours, though inside the call).
type callLog struct {
	mu     sync.Mutex
	calls  []span
	events []span
}

// call runs f with req's OnEvent timed, and logs it.
func (c *callLog) call(req modelcli.Request, f func(modelcli.Request) (modelcli.Response, error)) (modelcli.Response, error) {
	if on := req.OnEvent; on != nil {
		req.OnEvent = func(e modelcli.Event) {
			from := time.Now()
			on(e)
			c.add(&c.events, from)
		}
	}
	if on := req.OnStart; on != nil {
		req.OnStart = func(pid int) {
			from := time.Now()
			on(pid)
			c.add(&c.events, from)
		}
	}
	defer c.add(&c.calls, time.Now())
	return f(req)
}

func (c *callLog) add(to *[]span, from time.Time) {
	end := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	*to = append(*to, span{from, end})
}

// mark is where the log is now.
func (c *callLog) mark() [2]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return [2]int{len(c.calls), len(c.events)}
}

// since returns the calls and events after m.
func (c *callLog) since(m [2]int) (calls, events []span) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls[m[0]:]), slices.Clone(c.events[m[1]:])
}

// timedRunner is a Runner whose runs are logged.
type timedRunner struct {
	watcher.Runner
	log *callLog
}

func (t timedRunner) Run(ctx context.Context, req modelcli.Request) (modelcli.Response, error) {
	return t.log.call(req, func(req modelcli.Request) (modelcli.Response, error) { return t.Runner.Run(ctx, req) })
}

// timedStarter starts sessions whose turns are logged.
type timedStarter struct {
	live.Starter
	log *callLog
}

func (t timedStarter) Start(ctx context.Context, opts live.Options) (live.Session, error) {
	s, err := t.Starter.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	return timedSession{s, t.log}, nil
}

type timedSession struct {
	live.Session
	log *callLog
}

func (t timedSession) Turn(ctx context.Context, req modelcli.Request) (modelcli.Response, error) {
	return t.log.call(req, func(req modelcli.Request) (modelcli.Response, error) { return t.Session.Turn(ctx, req) })
}

// awaitReply polls the channel's newest messages for a reply to id.
func awaitReply(ctx context.Context, root tree.Root, id string) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		msgs, _ := channel.Recent(root, benchChannel, "", 3)
		for _, m := range msgs {
			if m.Metadata.InReplyTo == id {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return errors.New("no reply in a minute")
}
