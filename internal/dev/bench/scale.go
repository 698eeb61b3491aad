package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fusecount"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/web"
	"github.com/collabdev/collab/presence"
)

// The scale part: many `collab watch` processes (one per agent, as
// deployed, so that each one's CPU and RSS are its own) with the demo's
// stand-in as their model, on one tree seen through several fusecount
// views standing for hosts (bindfs's caches), each agent on one channel,
// with and without NATS. The file servers run in this process; the
// watchers' CPU is read from /proc per process. Messages come from another
// host (the backing folder); dispatch is timed from Post (and, with NATS,
// the publish) returning to the reply's file appearing (inotify on the
// backing folder). The watchers poll only (see startScaleWatchers).

// scaleSize is how big the scale part is.
type scaleSize struct {
	watchers, channels, hosts int
	messages                  int           // dispatched messages per run
	window                    time.Duration // idle window for CPU and requests
}

var (
	fullScale  = scaleSize{watchers: 200, channels: 50, hosts: 4, messages: 100, window: 20 * time.Second}
	quickScale = scaleSize{watchers: 40, channels: 10, hosts: 4, messages: 20, window: 5 * time.Second}
)

// scaleFigs are the values of one run, in figure order.
const (
	scP50 = iota
	scP99
	scCPUEach
	scCPUAll
	scRSSEach
	scRSSAll
	scOpsIdle
	scOpsEach
	scOpsBusy
	scWho
	scPage
	scN
)

func (b *bench) scale(ctx context.Context) []Figure {
	sz := b.size.scale
	var figs []Figure
	for _, nats := range []bool{false, true} {
		if ctx.Err() != nil {
			break
		}
		v := "poll 1 s"
		if nats {
			v = "NATS"
		}
		vals, err := b.repeat(ctx, "scale "+v, scN, func(run int) ([]float64, error) { return b.scaleRun(ctx, nats, run) })
		what := fmt.Sprintf("%d watchers, %d channels, %d hosts, %s", sz.watchers, sz.channels, sz.hosts, v)
		lat := fmt.Sprintf("%d messages per run, each to a random idle watcher, 100–200 ms apart, from another host; Post (and publish) returned → reply's file", sz.messages)
		win := fmt.Sprintf("over a %v idle window", sz.window)
		specs := []spec{
			{name: "scale " + what + ": dispatch p50", unit: "ms", note: lat},
			{name: "scale " + what + ": dispatch p99", unit: "ms", note: lat},
			{name: "scale " + what + ": idle CPU per watcher", unit: "% core", note: "mean of the collab watch processes " + win},
			{name: "scale " + what + ": idle CPU, all watchers", unit: "% core", note: "sum " + win},
			{name: "scale " + what + ": RSS per watcher", unit: "MB", note: "median VmRSS at the window's end"},
			{name: "scale " + what + ": RSS, all watchers", unit: "MB", note: "sum of VmRSS"},
			{name: "scale " + what + ": NFS ops/s, idle, all hosts", unit: "ops/s", note: "requests of every fusecount view with an NFS RPC counterpart (as nfsops) " + win},
			{name: "scale " + what + ": NFS ops/s, idle, per watcher", unit: "ops/s", note: win},
			{name: "scale " + what + ": NFS ops/s while dispatching", unit: "ops/s", note: "all views, from the first message to the last reply"},
			{name: "scale " + what + ": collab who", unit: "ms", note: "as a process on one view, median of 3 after a warm-up"},
			{name: "scale " + what + ": dashboard agents page", unit: "ms", note: "GET /agents in process on one view, median of 3 after a warm-up"},
		}
		for i, s := range specs {
			figs = append(figs, s.figure(vals[i], err))
		}
	}
	return figs
}

// scaleRun is one run of one variant; see the part's comment.
func (b *bench) scaleRun(ctx context.Context, nats bool, run int) (out []float64, err error) {
	sz := b.size.scale
	base := filepath.Join(b.dir, "scale", fmt.Sprintf("nats-%v-%d", nats, run))
	backing := tree.Root(filepath.Join(base, "tree"))
	chans := make([]string, sz.channels)
	for i := range chans {
		chans[i] = fmt.Sprintf("c%02d", i)
		if err := os.MkdirAll(backing.Channel(chans[i]), 0o755); err != nil {
			return nil, err
		}
	}
	bin, standin, err := b.binaries(ctx)
	if err != nil {
		return nil, err
	}
	var views []*fusecount.Mount
	defer func() {
		for _, v := range views {
			if uerr := v.Unmount(); err == nil {
				err = uerr
			}
		}
	}()
	for h := range sz.hosts {
		v, err := fusecount.New(string(backing), filepath.Join(base, fmt.Sprintf("host-%d", h)), fusecount.BindfsLike())
		if err != nil {
			return nil, err
		}
		views = append(views, v)
	}
	var nf *natsFleet
	if nats {
		if nf, err = startNATSFleet(ctx, filepath.Join(base, "nats")); err != nil {
			return nil, err
		}
		defer nf.stop()
	}
	ws, err := startScaleWatchers(bin, standin, views, chans, nf, sz.watchers)
	defer func() {
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Go(func() { w.stop() })
		}
		wg.Wait()
	}()
	if err != nil {
		return nil, err
	}
	if err := waitWithin(ctx, "the watchers' presence", 3*time.Minute, func() error {
		for _, w := range ws {
			if w.exited() {
				return fmt.Errorf("%s exited: %s", w.agent, tail(w.stderr.String(), 500))
			}
			if s, err := presence.Read(backing, w.agent); err != nil || s.State != presence.StateAwake {
				return errNotYet
			}
		}
		if nf != nil && slices.IndexFunc(chans, func(c string) bool { return !subscribed(nf.srv, natsbus.ChatSubject(c)) }) >= 0 {
			return errNotYet
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := sleep(ctx, quietGap); err != nil {
		return nil, err
	}
	out = make([]float64, scN)
	if err := measureIdle(ctx, ws, views, sz.window, out); err != nil {
		return nil, err
	}
	if out[scWho], err = whoTime(ctx, bin, tree.Root(views[0].Dir), len(ws)); err != nil {
		return nil, err
	}
	if out[scPage], err = agentsPageTime(tree.Root(views[0].Dir)); err != nil {
		return nil, err
	}
	if err := b.scaleDispatch(ctx, backing, ws, chans, nf, views, out); err != nil {
		return nil, err
	}
	return out, nil
}

// errNotYet is a condition not met yet.
var errNotYet = fmt.Errorf("not yet")

// waitWithin polls cond every 20 ms until it returns nil, another error
// than errNotYet, or d has passed.
func waitWithin(ctx context.Context, what string, d time.Duration, cond func() error) error {
	for deadline := time.Now().Add(d); ; {
		err := cond()
		if err == nil || err != errNotYet {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", d, what)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// startScaleWatchers starts n collab watch processes, watcher i as agent
// wNNN on channel i mod channels through view i mod hosts. They run with
// --no-fsnotify: 200 inotify instances are over Linux's default of 128 per
// user (fs.inotify.max_user_instances), and inotify would see nothing of
// the messages anyway, which come from another host.
func startScaleWatchers(bin, standin string, views []*fusecount.Mount, chans []string, nf *natsFleet, n int) ([]*idleWatcher, error) {
	var ws []*idleWatcher
	for i := range n {
		agent := fmt.Sprintf("w%03d", i)
		args := []string{"watch", "--root", views[i%len(views)].Dir, "--agent", agent, "--channel", chans[i%len(chans)],
			"--cli", "command", "--cmd", standin, "--poll", "1s", "--rate", "-1", "--pair-rate", "-1", "--no-fsnotify"}
		if nf != nil {
			args = append(args, "--nats", nf.srv.ClientURL())
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(childEnv(), "GOMAXPROCS=2")
		w, err := startProc(agent, cmd)
		if err != nil {
			return ws, err
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// measureIdle measures the watchers' CPU, RSS and file requests over the
// window into out.
func measureIdle(ctx context.Context, ws []*idleWatcher, views []*fusecount.Mount, window time.Duration, out []float64) error {
	for _, w := range ws {
		t, err := cpuTicks(w.cmd.Process.Pid)
		if err != nil {
			return err
		}
		w.ticks = t
	}
	for _, v := range views {
		v.Reset()
	}
	t0 := time.Now()
	if err := sleep(ctx, window); err != nil {
		return err
	}
	wall := time.Since(t0).Seconds()
	var ops uint64
	for _, v := range views {
		ops += v.Counts().Server().Total()
	}
	var rss []float64
	var ticks int64
	for _, w := range ws {
		t, err := cpuTicks(w.cmd.Process.Pid)
		if err != nil {
			return fmt.Errorf("%s: %w", w.agent, err)
		}
		ticks += t - w.ticks
		kb, err := statusKB(w.cmd.Process.Pid, "VmRSS")
		if err != nil {
			return err
		}
		rss = append(rss, float64(kb)*1024/1e6)
	}
	out[scCPUAll] = float64(ticks) / userHZ / wall * 100
	out[scCPUEach] = out[scCPUAll] / float64(len(ws))
	out[scRSSEach] = median(rss)
	for _, r := range rss {
		out[scRSSAll] += r
	}
	out[scOpsIdle] = float64(ops) / wall
	out[scOpsEach] = out[scOpsIdle] / float64(len(ws))
	return nil
}

// whoTime is collab who's wall time on root, the median of 3 after a
// warm-up.
func whoTime(ctx context.Context, bin string, root tree.Root, agents int) (float64, error) {
	var ds []float64
	for i := range 4 {
		t0 := time.Now()
		out, err := runCollab(ctx, bin, "who", "--root", string(root))
		took := time.Since(t0)
		if err != nil {
			return 0, err
		}
		if lines := strings.Count(string(out), "\n"); lines < agents {
			return 0, fmt.Errorf("collab who printed %d lines for %d agents", lines, agents)
		}
		if i > 0 {
			ds = append(ds, ms(took))
		}
	}
	return median(ds), nil
}

// agentsPageTime is the dashboard's agents page, served in this process
// on root, the median of 3 after a warm-up.
func agentsPageTime(root tree.Root) (float64, error) {
	srv, err := web.New(web.Config{Root: root, Person: "ann"})
	if err != nil {
		return 0, err
	}
	h := srv.Handler()
	req := func(target string) *http.Request {
		r := httptest.NewRequest("GET", target, nil)
		r.Host = "127.0.0.1:8765"
		local := net.Addr(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8765})
		return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req(srv.SignInPath()))
	cookies := rec.Result().Cookies()
	var ds []float64
	for i := range 4 {
		r := req("/agents")
		for _, c := range cookies {
			r.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		t0 := time.Now()
		h.ServeHTTP(rec, r)
		took := time.Since(t0)
		if rec.Code != http.StatusOK {
			return 0, fmt.Errorf("GET /agents: %d", rec.Code)
		}
		if i > 0 {
			ds = append(ds, ms(took))
		}
	}
	return median(ds), nil
}

// scaleDispatch sends the run's messages, each to a random watcher with
// none outstanding, and times each until its reply's file appears.
func (b *bench) scaleDispatch(ctx context.Context, backing tree.Root, ws []*idleWatcher, chans []string, nf *natsFleet, views []*fusecount.Mount, out []float64) error {
	names, closeWatch, err := watchNames(backing, chans)
	if err != nil {
		return err
	}
	defer closeWatch()
	for _, v := range views {
		v.Reset()
	}
	var mu sync.Mutex
	sent := map[string]time.Time{} // agent → when its message was visible
	var lat []time.Duration
	allIn := make(chan struct{})
	total := b.size.scale.messages
	go func() { // the collector
		for name := range names {
			nm, err := channel.ParseName(name)
			if err != nil {
				continue
			}
			mu.Lock()
			if t, ok := sent[nm.Agent]; ok {
				lat = append(lat, time.Since(t))
				delete(sent, nm.Agent)
				if len(lat) == total {
					close(allIn)
				}
			}
			mu.Unlock()
		}
	}()
	t0 := time.Now()
	w := &channel.Writer{Root: backing}
	for i := range total {
		if err := sleep(ctx, 100*time.Millisecond+rand.N(100*time.Millisecond)); err != nil {
			return err
		}
		k := rand.N(len(ws))
		mu.Lock()
		for _, busy := sent[ws[k].agent]; busy; _, busy = sent[ws[k].agent] {
			k = (k + 1) % len(ws)
		}
		mu.Unlock()
		m := channel.Message{SessionID: chans[k%len(chans)], From: senderAgent, To: ws[k].agent, Content: channel.Content{Text: fmt.Sprintf("hello %d", i)}}
		if err := w.Post(&m); err != nil {
			return err
		}
		if nf != nil {
			if err := nf.sender.PublishMessage(ctx, &m); err != nil {
				return err
			}
		}
		mu.Lock()
		sent[ws[k].agent] = time.Now()
		mu.Unlock()
	}
	select {
	case <-allIn:
	case <-time.After(time.Minute):
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("%d of %d replies did not come within a minute", len(sent), total)
	case <-ctx.Done():
		return ctx.Err()
	}
	wall := time.Since(t0).Seconds()
	all := fusecount.Counts{}
	for _, v := range views {
		for k, n := range v.Counts().Server() {
			all[k] += n
		}
	}
	out[scOpsBusy] = float64(all.Total()) / wall
	fmt.Fprintf(b.progress, "   scale dispatch: NFS ops by class %v; by kind %v\n", all.ByClass(), all.ByOp())
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	out[scP50], out[scP99] = ms(percentile(lat, 50)), ms(percentile(lat, 99))
	fmt.Fprintf(b.progress, "   scale dispatch: %d replies, min %v, max %v\n", len(lat), lat[0].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	return nil
}

// watchNames sends the names of files created or renamed into the channels'
// folders of backing (inotify sees every host's writes there).
func watchNames(backing tree.Root, chans []string) (<-chan string, func(), error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, nil, fmt.Errorf("inotify: %w", err)
	}
	for _, c := range chans {
		if _, err := unix.InotifyAddWatch(fd, backing.Channel(c), unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
			unix.Close(fd)
			return nil, nil, fmt.Errorf("inotify: %w", err)
		}
	}
	events := os.NewFile(uintptr(fd), "inotify")
	names := make(chan string, 4096)
	go func() {
		readInotify(events, names)
		close(names)
	}()
	return names, func() { events.Close() }, nil
}
