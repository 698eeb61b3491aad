package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fusecount"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// What one watcher costs the file server (the nfsops part): watchers run
// in this process (watcher.Run, configured as collab watch would be) on
// one "host", a fusecount view of a fresh tree with bindfs's caches (1 s
// attributes and entries, as the other parts' host views); messages come
// from another host (written to the backing folder, not counted). After
// the watchers are up and past the reader's settle time, every request the
// view gets for a window is counted: ops/s per watcher, for 1 watcher on
// 1..N channels (the fit a + b·channels) and for 1..N watchers on one
// channel each.

// watchMode is one kind of watcher.
type watchMode struct {
	key     string
	note    string
	poll    time.Duration
	fsnot   bool          // fswake on the channels' folders
	nats    bool          // natsbus wakes and announces
	busyGap time.Duration // a message to each watcher this often; 0: idle
	nfsLike bool          // the view caches as nfs(5)'s defaults, not as bindfs's
}

func nfsModes() []watchMode {
	return []watchMode{
		{key: "poll-1s", note: "idle, polling every 1 s, no wakes", poll: time.Second},
		{key: "poll-1s-nfscache", note: "idle, polling every 1 s, no wakes, the view caching as nfs(5)'s defaults (attributes 3 s, entries and negative entries 30 s)", poll: time.Second, nfsLike: true},
		{key: "fsnotify-1s", note: "idle, poll 1 s and fsnotify on the channels' folders (collab watch's default; inotify sees nothing of other hosts' writes)", poll: time.Second, fsnot: true},
		{key: "nats-1s", note: "idle, poll 1 s, fsnotify, NATS wakes and announces (embedded nats-server)", poll: time.Second, fsnot: true, nats: true},
		{key: "nats-10s", note: "idle, NATS wakes with a 10 s poll as backstop, fsnotify", poll: 10 * time.Second, fsnot: true, nats: true},
		{key: "busy-1s", note: "poll 1 s, fsnotify; a message to each watcher every 5 s from another host, answered by the demo's stand-in (a process per message, reading the message through the view)", poll: time.Second, fsnot: true, busyGap: 5 * time.Second},
	}
}

// nfsSeries are the points of a series up to max: 1, 2, 5, 10, …
func nfsSeries(max int) []int {
	var out []int
	for _, n := range []int{1, 2, 5, 10, 20, 50} {
		if n <= max {
			out = append(out, n)
		}
	}
	return out
}

func (b *bench) nfsops(ctx context.Context) []Figure {
	var figs []Figure
	perAgent := map[string]float64{} // mode → ops/s of 1 watcher × 1 channel, median
	for _, m := range nfsModes() {
		if ctx.Err() != nil {
			break
		}
		fs, one := b.nfsMode(ctx, m)
		figs = append(figs, fs...)
		if one > 0 {
			perAgent[m.key] = one
		}
	}
	ops := b.nfsServerOps
	for _, key := range []string{"poll-1s", "fsnotify-1s", "nats-10s", "busy-1s"} {
		s := spec{name: fmt.Sprintf("nfsops capacity of one export at %s ops/s, watchers of 1 channel, %s", thousands(int(ops)), key), unit: "agents",
			note: "the server's ops/s (-nfs-ops) divided by one watcher's ops/s on 1 channel (above); the server's rate is an assumption, not measured here"}
		if v, ok := perAgent[key]; ok && v > 0 {
			figs = append(figs, s.figure([]float64{ops / v}, nil))
		} else {
			figs = append(figs, s.figure(nil, fmt.Errorf("%s not measured", key)))
		}
	}
	return figs
}

// nfsMode measures one kind of watcher over its two series and returns its
// figures and the median ops/s of one watcher on one channel.
func (b *bench) nfsMode(ctx context.Context, m watchMode) ([]Figure, float64) {
	chans, agents := nfsSeries(b.size.nfsMax), nfsSeries(b.size.nfsMax)[1:]
	nfig := 2 + len(agents) // a, b, then per watcher at each agents point
	var lastOne fusecount.Counts
	vals, err := b.repeat(ctx, "nfsops "+m.key+" a b per-watcher…", nfig, func(run int) ([]float64, error) {
		var xs, ys []float64
		for _, c := range chans {
			perW, counts, err := b.nfsPoint(ctx, m, 1, c, run)
			if err != nil {
				return nil, err
			}
			if c == 1 {
				lastOne = counts
			}
			xs, ys = append(xs, float64(c)), append(ys, perW)
		}
		a, slope := fitLine(xs, ys)
		out := []float64{a, slope}
		for _, n := range agents {
			perW, _, err := b.nfsPoint(ctx, m, n, 1, run)
			if err != nil {
				return nil, err
			}
			out = append(out, perW)
		}
		return out, nil
	})
	w := b.size.nfsWindow
	base := fmt.Sprintf("; requests with an NFS RPC counterpart (fusecount.Counts.Server: not opendir, releasedir, release, flush, getxattr) to one fusecount view (caches: bindfs's, attributes and entries 1 s, no negative entries, unless said) over %v, per watcher", w)
	fa := spec{name: fmt.Sprintf("nfsops %s: a, ops/s per watcher (fixed part)", m.key), unit: "ops/s", note: m.note + base + "; fit ops/s = a + b·channels over 1 watcher on " + ints(chans) + " channels"}.figure(vals[0], err)
	if lastOne != nil {
		fa.Note += "; 1 watcher × 1 channel, every FUSE request by kind/class over the window: " + lastOne.String()
	}
	figs := []Figure{fa,
		spec{name: fmt.Sprintf("nfsops %s: b, ops/s per channel", m.key), unit: "ops/s", note: m.note + base}.figure(vals[1], err)}
	for i, n := range agents {
		figs = append(figs, spec{name: fmt.Sprintf("nfsops %s: ops/s per watcher, %d watchers × 1 channel", m.key, n), unit: "ops/s", note: m.note + base}.figure(vals[2+i], err))
	}
	var one float64
	if len(vals[0]) > 0 {
		var per []float64
		for i := range vals[0] {
			per = append(per, vals[0][i]+vals[1][i])
		}
		one = median(per)
	}
	return figs, one
}

// fitLine is the least-squares line y = a + b·x.
func fitLine(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	if n == 0 {
		return 0, 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	if d := n*sxx - sx*sx; d != 0 {
		b = (n*sxy - sx*sy) / d
	}
	return (sy - b*sx) / n, b
}

func ints(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, fmt.Sprint(n))
	}
	return strings.Join(s, ", ")
}

// nfsPoint runs agents watchers of channels channels each on one counting
// view of a fresh tree and returns the requests per second per watcher over
// the window, and the counts.
func (b *bench) nfsPoint(ctx context.Context, m watchMode, agents, channels, run int) (float64, fusecount.Counts, error) {
	base := filepath.Join(b.dir, "nfsops", fmt.Sprintf("%s-%dx%d-%d", m.key, agents, channels, run))
	backing := tree.Root(filepath.Join(base, "tree"))
	var chNames []string
	for i := range channels {
		chNames = append(chNames, fmt.Sprintf("ch%02d", i))
		if err := os.MkdirAll(backing.Channel(chNames[i]), 0o755); err != nil {
			return 0, nil, err
		}
	}
	cache := fusecount.BindfsLike()
	if m.nfsLike {
		cache = fusecount.NFSLike()
	}
	view, err := fusecount.New(string(backing), filepath.Join(base, "host-a"), cache)
	if err != nil {
		return 0, nil, err
	}
	defer view.Unmount()
	var nf *natsFleet
	if m.nats {
		if nf, err = startNATSFleet(ctx, filepath.Join(base, "nats")); err != nil {
			return 0, nil, err
		}
		defer nf.stop()
	}
	var runner watcher.Runner = &fakeRunner{started: make(chan call, 1024), reply: watcher.NoReply}
	if m.busyGap > 0 {
		standin, err := b.standinBinary(ctx)
		if err != nil {
			return 0, nil, err
		}
		runner = &modelcli.Command{Argv: []string{standin}}
	}
	f := &fleet{}
	defer f.stop()
	root := tree.Root(view.Dir)
	for i := range agents {
		cfg := watcher.Config{Root: root, Agent: fmt.Sprintf("ag%02d", i), Channels: chNames, Runner: runner,
			Poll: m.poll, Grace: 5 * time.Second, Rate: -1, PairRate: -1, Logger: slog.New(slog.DiscardHandler)}
		if m.fsnot {
			cfg.Wakers = append(cfg.Wakers, fswake.Channels{Root: root})
		}
		if nf != nil {
			if err := nf.wire(ctx, &cfg); err != nil {
				return 0, nil, err
			}
		}
		if err := f.start(ctx, cfg); err != nil {
			return 0, nil, err
		}
	}
	if err := waitFor(ctx, "the watchers' presence", func() bool {
		for i := range agents {
			if _, err := presence.Read(backing, fmt.Sprintf("ag%02d", i)); err != nil {
				return false
			}
		}
		return nf == nil || slices.IndexFunc(chNames, func(c string) bool { return !subscribed(nf.srv, natsbus.ChatSubject(c)) }) < 0
	}); err != nil {
		return 0, nil, err
	}
	if err := sleep(ctx, quietGap); err != nil { // past the reader's settle time
		return 0, nil, err
	}
	stopSend := make(chan struct{})
	var sent sync.WaitGroup
	if m.busyGap > 0 {
		sent.Go(func() { busySender(ctx, backing, nf, agents, chNames[0], m.busyGap, stopSend) })
	}
	view.Reset()
	err = sleep(ctx, b.size.nfsWindow)
	counts := view.Counts()
	close(stopSend)
	sent.Wait()
	if err != nil {
		return 0, nil, err
	}
	perW := float64(counts.Server().Total()) / b.size.nfsWindow.Seconds() / float64(agents)
	fmt.Fprintf(b.progress, "   nfsops %s %d watcher(s) × %d channel(s): %.1f server ops/s per watcher (%.1f FUSE requests); by kind %v\n", m.key, agents, channels,
		perW, float64(counts.Total())/b.size.nfsWindow.Seconds()/float64(agents), counts.ByOp())
	return perW, counts, f.stop()
}

// busySender posts, from another host (the backing folder), a message to
// each of agents watchers in turn, each getting one every gap, until stop.
func busySender(ctx context.Context, backing tree.Root, nf *natsFleet, agents int, ch string, gap time.Duration, stop <-chan struct{}) {
	w := &channel.Writer{Root: backing}
	t := time.NewTicker(gap / time.Duration(agents))
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-t.C:
		case <-stop:
			return
		case <-ctx.Done():
			return
		}
		m := channel.Message{SessionID: ch, From: senderAgent, To: fmt.Sprintf("ag%02d", i%agents), Content: channel.Content{Text: fmt.Sprintf("status %d?", i)}}
		if err := w.Post(&m); err == nil && nf != nil {
			nf.sender.PublishMessage(ctx, &m)
		}
	}
}

// fleet is watchers run in this process.
type fleet struct {
	mu    sync.Mutex
	stops []func() error
}

func (f *fleet) start(ctx context.Context, cfg watcher.Config) error {
	stop, err := startWatcher(ctx, cfg, func() bool { return true })
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.stops = append(f.stops, stop)
	f.mu.Unlock()
	return nil
}

// stop stops every watcher (side by side); a second call does nothing.
func (f *fleet) stop() error {
	f.mu.Lock()
	stops := f.stops
	f.stops = nil
	f.mu.Unlock()
	errs := make([]error, len(stops))
	var wg sync.WaitGroup
	for i, s := range stops {
		wg.Go(func() { errs[i] = s() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// natsFleet is an embedded nats-server with the stream made (as collab
// nats init would), a sender on another host, and the watchers'
// connections.
type natsFleet struct {
	srv    *server.Server
	sender *natsbus.Bus
	mu     sync.Mutex
	undo   []func()
}

func startNATSFleet(ctx context.Context, storeDir string) (*natsFleet, error) {
	srv, err := startNATS(storeDir)
	if err != nil {
		return nil, err
	}
	nf := &natsFleet{srv: srv, undo: []func(){srv.Shutdown}}
	quiet := slog.New(slog.DiscardHandler)
	nf.sender, err = natsbus.Connect(ctx, natsbus.Options{URL: srv.ClientURL(), Name: natsbus.ConnName(senderAgent, "host-b"), Logger: quiet})
	if err != nil {
		nf.stop()
		return nil, err
	}
	nf.undo = append(nf.undo, nf.sender.Close)
	if _, err := nf.sender.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		nf.stop()
		return nil, err
	}
	return nf, nil
}

// wire connects a watcher's Bus and wires it into cfg as collab watch
// --nats does: wakes, announces and the publisher of its replies.
func (nf *natsFleet) wire(ctx context.Context, cfg *watcher.Config) error {
	bus, err := natsbus.Connect(ctx, natsbus.Options{URL: nf.srv.ClientURL(), Name: natsbus.ConnName(cfg.Agent, "host-a"), Logger: cfg.Logger})
	if err != nil {
		return err
	}
	nf.mu.Lock()
	nf.undo = append(nf.undo, func() { bus.Drain() })
	nf.mu.Unlock()
	announce := make(chan channel.Message, 256)
	cfg.Announce = announce
	cfg.Publisher = bus
	cfg.Wakers = append(cfg.Wakers, natsbus.Waker{Bus: bus, OnMessage: func(m channel.Message) {
		select {
		case announce <- m:
		default:
		}
	}})
	return nil
}

// stop closes the connections and the server (after the watchers).
func (nf *natsFleet) stop() {
	nf.mu.Lock()
	undo := nf.undo
	nf.undo = nil
	nf.mu.Unlock()
	for _, f := range slices.Backward(undo) {
		f()
	}
}

// defaultNFSOps is the file server's operations per second the capacity
// figures assume unless -nfs-ops says otherwise: a conservative figure
// for one export of a modest Linux knfsd serving small metadata requests
// (GETATTR, LOOKUP, short READDIR) from memory. It is an assumption, not a
// measurement: the research notes give no server rate, so measure yours
// (nfsstat -s over a minute of normal load) and pass it.
const defaultNFSOps = 10_000
