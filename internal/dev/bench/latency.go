package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

const (
	benchChannel = "bench"
	benchAgent   = "codex"
	senderAgent  = "alice"
	latencyPoll  = time.Second
	// waitLong bounds each wait for something that should happen soon; it
	// is reached only when something is wrong.
	waitLong = 20 * time.Second
)

// call is one start of the fake CLI.
type call struct {
	id string    // the message it was started for
	at time.Time // when Run was called
}

// fakeRunner stands for the model CLI: it records when it is started and
// for which message, and answers at once.
type fakeRunner struct {
	started chan<- call
	reply   string // default "ack MESSAGE-ID"
}

func (f *fakeRunner) Run(ctx context.Context, req modelcli.Request) (modelcli.Response, error) {
	c := call{at: time.Now()}
	for _, kv := range slices.Backward(req.Env) {
		if v, ok := strings.CutPrefix(kv, "COLLAB_MESSAGE_ID="); ok {
			c.id = v
			break
		}
	}
	select {
	case f.started <- c:
	case <-ctx.Done():
		return modelcli.Response{}, ctx.Err()
	}
	text := f.reply
	if text == "" {
		text = "ack " + c.id
	}
	return modelcli.Response{Text: text}, nil
}

// layout is one way of placing sender and watcher.
type layout struct {
	key      string // for folder names
	name     string // for progress lines
	twoHosts bool   // two bindfs views of one folder
	nats     bool
	n        int
	// sideBySide runs the runs at once, each in its own tree with its own
	// mounts and watcher: for a layout slow enough (seconds per message)
	// that sharing two cores changes nothing measured.
	sideBySide bool
	gap        func() time.Duration // before each message, after the last reply
	over       time.Duration        // progress lines count the messages slower than this
	p50, p99   spec
}

// shortGap lets the watcher finish the last reply (its claim, job record,
// presence and state) before the next message: what is measured is
// dispatch, not queueing behind the previous run.
func shortGap() time.Duration { return 50*time.Millisecond + rand.N(100*time.Millisecond) }

func (b *bench) latencyLocal(ctx context.Context) []Figure {
	return b.latency(ctx, layout{
		key: "local", name: "local fsnotify", n: b.size.local, gap: shortGap, over: 5 * time.Millisecond,
		p50: spec{name: "latency (a) local, fsnotify: p50", unit: "ms", max: 5,
			note: fmt.Sprintf("message visible → CLI started; %d messages per run; one folder, watcher woken by fsnotify, poll 1 s", b.size.local)},
		p99: spec{name: "latency (a) local, fsnotify: p99", unit: "ms",
			note: fmt.Sprintf("nearest rank over %d messages per run", b.size.local)},
	})
}

func (b *bench) latencyPoll(ctx context.Context) []Figure {
	bound := float64((latencyPoll + 50*time.Millisecond) / time.Millisecond)
	return b.latency(ctx, layout{
		key: "poll", name: "two mounts, polling", twoHosts: true, n: b.size.poll, sideBySide: true, over: latencyPoll + 50*time.Millisecond,
		// As chat arrives: after the channel has been quiet for a while
		// (here past the reader's 2 s settle time, so an idle watcher no
		// longer lists a folder whose attributes look unchanged), at a
		// random point of the poll cycle.
		gap: func() time.Duration { return quietGap + rand.N(latencyPoll) },
		p50: spec{name: "latency (b) 2 bindfs mounts, poll 1 s: p50", unit: "ms", max: bound,
			note: fmt.Sprintf("watcher on view A (poll 1 s; fsnotify, which sees nothing of B), sender on view B; each message %v + a random part of the poll cycle after the last reply; %d messages per run, runs side by side", quietGap, b.size.poll)},
		p99: spec{name: "latency (b) 2 bindfs mounts, poll 1 s: p99", unit: "ms", max: bound,
			note: fmt.Sprintf("nearest rank over %d messages per run", b.size.poll)},
	})
}

// quietGap is how long the channel stays quiet before each message of
// layout (b): longer than the reader's settle time (2 s) plus a poll.
const quietGap = 3 * time.Second

func (b *bench) latencyNATS(ctx context.Context) []Figure {
	return b.latency(ctx, layout{
		key: "nats", name: "two mounts, NATS", twoHosts: true, nats: true, n: b.size.nats, gap: shortGap, over: 20 * time.Millisecond,
		p50: spec{name: "latency (c) 2 bindfs mounts + NATS: p50", unit: "ms", max: 20,
			note: fmt.Sprintf("as (b), plus an embedded nats-server with the JetStream stream; visible = after Post and PublishMessage; watcher with natsbus.Waker and Announce; %d messages per run", b.size.nats)},
		p99: spec{name: "latency (c) 2 bindfs mounts + NATS: p99", unit: "ms",
			note: fmt.Sprintf("nearest rank over %d messages per run", b.size.nats)},
	})
}

func (b *bench) latency(ctx context.Context, l layout) []Figure {
	what := l.name + " p50/p99 ms"
	measure := func(run int) ([]float64, error) {
		lat, err := b.latencyRun(ctx, l, run)
		if err != nil {
			return nil, err
		}
		slices.Sort(lat)
		fmt.Fprintf(b.progress, "   %s run %d: %d messages, min %v, max %v, %d over %v\n", l.name, run+1, len(lat),
			lat[0].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond), countOver(lat, l.over), l.over)
		return []float64{ms(percentile(lat, 50)), ms(percentile(lat, 99))}, nil
	}
	if l.sideBySide {
		results := make([]result, b.runs)
		var wg sync.WaitGroup
		for i := range b.runs {
			wg.Go(func() { results[i].vals, results[i].err = measure(i) })
		}
		wg.Wait()
		measure = func(run int) ([]float64, error) { return results[run].vals, results[run].err }
	}
	vals, err := b.repeat(ctx, what, 2, measure)
	return []Figure{l.p50.figure(vals[0], err), l.p99.figure(vals[1], err)}
}

// countOver counts the durations longer than d.
func countOver(ds []time.Duration, d time.Duration) int {
	n := 0
	for _, x := range ds {
		if x > d {
			n++
		}
	}
	return n
}

// result is the outcome of one run.
type result struct {
	vals []float64
	err  error
}

// latencyRun starts a watcher in a fresh tree, sends it l.n messages (and a
// warm-up first) one after another and returns, for each, the time from
// its being visible to the CLI being started.
func (b *bench) latencyRun(ctx context.Context, l layout, run int) (lat []time.Duration, err error) {
	base := filepath.Join(b.dir, fmt.Sprintf("latency-%s-%d", l.key, run))
	backing := tree.Root(filepath.Join(base, "tree"))
	watchRoot, sendRoot, unmount, err := b.latencyTree(ctx, l, base, backing)
	// Deferred first, so it runs after the watcher has stopped.
	defer func() {
		if uerr := unmount(); err == nil {
			err = uerr
		}
	}()
	if err != nil {
		return nil, err
	}

	started := make(chan call, 1)
	cfg := watcher.Config{
		Root:     watchRoot,
		Agent:    benchAgent,
		Channels: []string{benchChannel},
		Runner:   &fakeRunner{started: started},
		Poll:     latencyPoll,
		Grace:    5 * time.Second,
		Rate:     -1, // the runaway guards are not what is measured
		PairRate: -1,
		Wakers:   []watcher.Waker{fswake.Channels{Root: watchRoot}},
	}
	logger, closeLog, err := watchLogger(watchRoot, benchAgent)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	cfg.Logger = logger

	var sender *natsbus.Bus
	var srv *server.Server
	if l.nats {
		var stopNATS func()
		srv, sender, stopNATS, err = wireNATS(ctx, filepath.Join(base, "nats"), &cfg)
		defer stopNATS()
		if err != nil {
			return nil, err
		}
	}

	stop, err := startWatcher(ctx, cfg, func() bool {
		if _, err := presence.Read(backing, benchAgent); err != nil {
			return false
		}
		return srv == nil || subscribed(srv, natsbus.ChatSubject(benchChannel))
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := stop(); err == nil {
			err = serr
		}
	}()
	p := pinger{l: l, w: &channel.Writer{Root: sendRoot}, sender: sender, started: started,
		claims: &claim.Store{Root: backing, Self: claim.Owner{Agent: benchAgent}}}
	return p.run(ctx)
}

// latencyTree makes the tree of one run and, for a two-host layout, the
// two bindfs views of it; it returns where the watcher and the sender work
// and a function that undoes the mounts (to call even on an error).
func (b *bench) latencyTree(ctx context.Context, l layout, base string, backing tree.Root) (watchRoot, sendRoot tree.Root, unmount func() error, err error) {
	var mounted []string
	unmount = func() error {
		var first error
		for _, at := range slices.Backward(mounted) {
			if err := b.mounts.unmount(at); first == nil {
				first = err
			}
		}
		return first
	}
	if err := os.MkdirAll(backing.Channel(benchChannel), 0o755); err != nil {
		return "", "", unmount, err
	}
	if !l.twoHosts {
		return backing, backing, unmount, nil
	}
	a, s := filepath.Join(base, "host-a"), filepath.Join(base, "host-b")
	for _, at := range []string{a, s} {
		if err := b.mounts.mount(ctx, string(backing), at); err != nil {
			return "", "", unmount, err
		}
		mounted = append(mounted, at)
	}
	return tree.Root(a), tree.Root(s), unmount, nil
}

// wireNATS starts an embedded nats-server in storeDir with the stream made
// (as deployed: the stream exists before the watcher connects, collab nats
// init, so publishes wait for JetStream's ack), connects a sender, and
// wires the watcher's Bus into cfg as collab watch does. stop closes
// whatever was started (to call even on an error).
func wireNATS(ctx context.Context, storeDir string, cfg *watcher.Config) (srv *server.Server, sender *natsbus.Bus, stop func(), err error) {
	var undo []func()
	stop = func() {
		for _, f := range slices.Backward(undo) {
			f()
		}
	}
	if srv, err = startNATS(storeDir); err != nil {
		return nil, nil, stop, err
	}
	undo = append(undo, srv.Shutdown)
	quiet := slog.New(slog.DiscardHandler)
	sender, err = natsbus.Connect(ctx, natsbus.Options{URL: srv.ClientURL(), Name: natsbus.ConnName(senderAgent, "host-b"), Logger: quiet})
	if err != nil {
		return nil, nil, stop, err
	}
	undo = append(undo, sender.Close)
	if _, err := sender.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		return nil, nil, stop, err
	}
	bus, err := natsbus.Connect(ctx, natsbus.Options{URL: srv.ClientURL(), Name: natsbus.ConnName(benchAgent, "host-a"), Logger: cfg.Logger})
	if err != nil {
		return nil, nil, stop, err
	}
	undo = append(undo, func() { bus.Drain() })
	announce := make(chan channel.Message, 256)
	cfg.Announce = announce
	cfg.Publisher = bus
	cfg.Wakers = append(cfg.Wakers, natsbus.Waker{Bus: bus, OnMessage: func(m channel.Message) {
		select {
		case announce <- m:
		default:
		}
	}})
	return srv, sender, stop, nil
}

// pinger sends a run's messages one after another and times each.
type pinger struct {
	l       layout
	w       *channel.Writer
	sender  *natsbus.Bus // publishes each message after its file; may be nil
	started <-chan call  // the fake CLI's starts
	claims  *claim.Store // where the reply shows
}

// run sends l.n messages after a warm-up, each l.gap() after the reply to
// the one before, and returns for each the time from its being visible to
// the CLI being started.
func (p *pinger) run(ctx context.Context) ([]time.Duration, error) {
	var lat []time.Duration
	for i := range p.l.n + 1 { // 0 is the warm-up
		if err := sleep(ctx, p.l.gap()); err != nil {
			return nil, err
		}
		m := channel.Message{SessionID: benchChannel, From: senderAgent, To: benchAgent, Content: channel.Content{Text: fmt.Sprintf("ping %d", i)}}
		if err := p.w.Post(&m); err != nil {
			return nil, err
		}
		if p.sender != nil {
			if err := p.sender.PublishMessage(ctx, &m); err != nil {
				return nil, err
			}
		}
		visible := time.Now()
		select {
		case c := <-p.started:
			if c.id != m.ID {
				return nil, fmt.Errorf("CLI started for %s, want %s", c.id, m.ID)
			}
			if i > 0 {
				lat = append(lat, c.at.Sub(visible))
			}
		case <-time.After(waitLong):
			return nil, fmt.Errorf("message %d: the CLI did not start within %v", i, waitLong)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if err := waitFor(ctx, "the reply to "+m.ID, func() bool {
			c, err := p.claims.Read(benchChannel, m.ID)
			return err == nil && c.Status == claim.Replied
		}); err != nil {
			return nil, err
		}
	}
	return lat, nil
}

// startWatcher runs watcher.Run in a goroutine and waits until ready
// reports true. stop cancels it and waits for it to return.
func startWatcher(ctx context.Context, cfg watcher.Config, ready func() bool) (stop func() error, err error) {
	wctx, cancel := context.WithCancel(ctx)
	exited := make(chan error, 1)
	go func() { exited <- watcher.Run(wctx, cfg) }()
	stop = func() error {
		cancel()
		select {
		case err := <-exited:
			return err
		case <-time.After(cfg.Grace + waitLong):
			return errors.New("the watcher did not stop")
		}
	}
	for deadline := time.Now().Add(waitLong); !ready(); {
		select {
		case err := <-exited:
			cancel()
			return nil, fmt.Errorf("watcher: %w", err)
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return nil, errors.New("the watcher did not start")
		}
	}
	return stop, nil
}

// watchLogger logs as collab watch does: JSON lines at info level to
// ROOT/logs/AGENT.log, and text (here discarded; a daemon's stderr).
func watchLogger(root tree.Root, agent string) (*slog.Logger, func(), error) {
	if err := os.MkdirAll(root.Logs(), 0o755); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(filepath.Join(root.Logs(), agent+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return nil, nil, err
	}
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	h := slog.NewMultiHandler(slog.NewTextHandler(io.Discard, opts), slog.NewJSONHandler(f, opts))
	return slog.New(h).With("agent", agent), func() { f.Close() }, nil
}

// startNATS starts an embedded nats-server with JetStream on a free port.
func startNATS(storeDir string) (*server.Server, error) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, JetStream: true, StoreDir: storeDir})
	if err != nil {
		return nil, fmt.Errorf("nats-server: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, errors.New("nats-server did not start")
	}
	return s, nil
}

// subscribed reports whether a client subscribes to exactly subject (the
// stream's own collab.chat.> does not count).
func subscribed(s *server.Server, subject string) bool {
	sz, err := s.Subsz(&server.SubszOptions{Subscriptions: true, Test: subject})
	if err != nil {
		return false
	}
	return slices.ContainsFunc(sz.Subs, func(d server.SubDetail) bool { return d.Subject == subject })
}

// waitFor polls cond every 2 ms for up to waitLong.
func waitFor(ctx context.Context, what string, cond func() bool) error {
	for deadline := time.Now().Add(waitLong); !cond(); {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		if err := sleep(ctx, 2*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
