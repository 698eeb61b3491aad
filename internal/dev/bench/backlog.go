package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

const (
	backlogChannel = "big"
	// userHZ is the unit of utime and stime in /proc/PID/stat: fixed at
	// 100 for user space on Linux, whatever the kernel's HZ.
	userHZ = 100
)

// backlogAgent is the watcher of backlog run i; the fixture holds one
// message for each, named after all the others.
func backlogAgent(i int) string { return "backlog-" + strconv.Itoa(i+1) }

// backlogSenders are the senders of the backlog's messages, each with a
// key trusted in the fixture's keyring.
var backlogSenders = []string{"alice", "bob", "carol", "dave", "qc-1"}

// backlogFixture writes, once, a channel of b.size.backlog messages that are
// for none of the bench's agents, then one message for each backlog run's
// agent, every one signed by its sender, and returns its root. Files are
// written directly (no fsync), 1 s apart in name time, ending a minute
// ago; the messages are signed as they are written, four at a time.
func (b *bench) backlogFixture() (tree.Root, error) {
	if b.backlogRoot != "" {
		return tree.Root(b.backlogRoot), nil
	}
	root := tree.Root(filepath.Join(b.dir, "backlog"))
	dir := root.Channel(backlogChannel)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	start := time.Now()
	signers, err := trustKeys(root, backlogSenders)
	if err != nil {
		return "", fmt.Errorf("backlog fixture: %w", err)
	}
	n := b.size.backlog
	first := time.Now().UTC().Truncate(time.Second).Add(-time.Duration(n+b.runs+60) * time.Second)
	jobs := make(chan int)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range jobs {
				m := backlogMessage(first, i, n)
				err := m.Sign(signers[m.From])
				var data []byte
				if err == nil {
					data, err = m.Encode()
				}
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, m.ID+".json"), data, 0o644)
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n + b.runs {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return "", fmt.Errorf("backlog fixture: %w", err)
	default:
	}
	// Written back now, not while later figures are measured.
	if err := syncFS(dir); err != nil {
		return "", fmt.Errorf("backlog fixture: %w", err)
	}
	fmt.Fprintf(b.progress, "   fixture: %s signed messages written and synced in %v\n", thousands(n+b.runs), time.Since(start).Round(time.Millisecond))
	b.backlogRoot = string(root)
	return root, nil
}

// backlogMessage is message i of the backlog fixture, named i seconds
// after first: below n, one for none of the bench's agents; from n on, the
// one message for backlog run i-n, named last.
func backlogMessage(first time.Time, i, n int) channel.Message {
	at := first.Add(time.Duration(i) * time.Second)
	if i >= n {
		return channel.Message{
			ID: channel.NewID("alice", at, "beef"), Timestamp: at.Format(channel.TimeFormat),
			SessionID: backlogChannel, From: "alice", To: backlogAgent(i - n), Type: "chat",
			Content:  channel.Content{Text: "you are wanted after all that"},
			Metadata: channel.Metadata{Mode: channel.ModeChat, Turn: "alice"},
		}
	}
	senders := backlogSenders
	from := senders[i%len(senders)]
	to, text := channel.Broadcast, fmt.Sprintf("build %d finished: %d tests passed, nothing for anyone to do", i, 1000+i%97)
	switch i % 4 {
	case 1:
		to = senders[(i+1)%len(senders)]
		text = fmt.Sprintf("please look at issue #%d when you can, @%s", i, to)
	case 2:
		text = fmt.Sprintf("%s: deploy %d is done", senders[(i+2)%len(senders)], i)
	}
	return channel.Message{
		ID: channel.NewID(from, at, fmt.Sprintf("%04x", i&0xffff)), Timestamp: at.Format(channel.TimeFormat),
		SessionID: backlogChannel, From: from, To: to, Type: "chat",
		Content:  channel.Content{Text: text},
		Metadata: channel.Metadata{Mode: channel.ModeChat, Turn: from, Host: "host-2"},
	}
}

func (b *bench) backlog(ctx context.Context) []Figure {
	n := b.size.backlog
	target := 5 * float64(n) / 100_000
	watch := spec{name: fmt.Sprintf("backlog %s signed: watcher replay → CLI started", thousands(n)), unit: "s", max: target,
		note: "watcher.Run with Replay from the zero time until its CLI starts for the one message for it, named after the " + thousands(n) +
			" that are not (all read, decoded, filtered and logged at info level to a file as collab watch does; every message signed, the one for it verified against ROOT/keys under trust known); target 5 s per 100,000"}
	read := spec{name: fmt.Sprintf("backlog %s signed: Reader.Scan + IsFor", thousands(n)), unit: "s", max: target,
		note: "one channel.Reader.Scan from the zero cursor and IsFor on every message, no watcher: the floor under the figure above"}
	root, err := b.backlogFixture()
	if err != nil {
		return []Figure{watch.figure(nil, err), read.figure(nil, err)}
	}
	wv, werr := b.repeat(ctx, "backlog watcher s", 1, func(run int) ([]float64, error) {
		d, err := backlogWatcher(ctx, root, run)
		return []float64{d.Seconds()}, err
	})
	rv, rerr := b.repeat(ctx, "backlog reader s", 1, func(int) ([]float64, error) {
		d, err := backlogReader(root, n+b.runs)
		return []float64{d.Seconds()}, err
	})
	return []Figure{watch.figure(wv[0], werr), read.figure(rv[0], rerr)}
}

// backlogWatcher runs the watcher of backlog run i over the whole channel
// and returns the time from watcher.Run to its CLI being started.
func backlogWatcher(ctx context.Context, root tree.Root, run int) (time.Duration, error) {
	agent := backlogAgent(run)
	logger, closeLog, err := watchLogger(root, agent)
	if err != nil {
		return 0, err
	}
	defer closeLog()
	started := make(chan call, 1)
	cfg := watcher.Config{
		Root:     root,
		Agent:    agent,
		Channels: []string{backlogChannel},
		Runner:   &fakeRunner{started: started, reply: watcher.NoReply},
		Replay:   &watcher.Replay{},
		Verifier: signing.NewVerifier(keyring.Open(root.Keys())),
		Trust:    signing.Known,
		Grace:    5 * time.Second,
		Rate:     -1,
		PairRate: -1,
		Logger:   logger,
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exited := make(chan error, 1)
	t0 := time.Now()
	go func() { exited <- watcher.Run(wctx, cfg) }()
	var took time.Duration
	select {
	case c := <-started:
		took = c.at.Sub(t0)
	case err := <-exited:
		return 0, fmt.Errorf("watcher: %v", err)
	case <-time.After(5 * time.Minute):
		err = errors.New("the CLI did not start within 5 minutes")
	case <-ctx.Done():
		err = ctx.Err()
	}
	cancel()
	select {
	case <-exited:
	case <-time.After(cfg.Grace + waitLong):
		return 0, errors.New("the watcher did not stop")
	}
	return took, err
}

// backlogReader reads the whole channel with a new Reader and filters it
// for an agent nothing is for.
func backlogReader(root tree.Root, want int) (time.Duration, error) {
	t0 := time.Now()
	r, err := channel.NewReader(root, backlogChannel, channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		return 0, err
	}
	msgs, skips, err := r.Scan()
	if err != nil {
		return 0, err
	}
	mine := 0
	for i := range msgs {
		if msgs[i].IsFor("reader") {
			mine++
		}
	}
	took := time.Since(t0)
	if len(msgs) < want || len(skips) > 0 || mine > 0 {
		return 0, fmt.Errorf("scan: %d messages (want %d), %d skips, %d for the reader", len(msgs), want, len(skips), mine)
	}
	return took, nil
}

func (b *bench) idle(ctx context.Context) []Figure {
	n, window := b.size.backlog, b.size.idle
	cpu := spec{name: fmt.Sprintf("idle watcher CPU, %s signed msgs, poll 1 s, %d s", thousands(n), int(window.Seconds())), unit: "% core", max: 2,
		note: fmt.Sprintf("collab watch (poll 1 s, fsnotify) over the backlog channel, utime+stime over %v once idle; %d watcher(s) measured side by side", window, b.runs)}
	rss := spec{name: "idle watcher RSS at the end", unit: "MB", max: 40,
		note: "VmRSS of the same processes after the window (MB = 10^6 bytes)"}
	vals, err := b.idleRun(ctx)
	return []Figure{cpu.figure(vals[0], err), rss.figure(vals[1], err)}
}

// idleWatcher is one collab watch child.
type idleWatcher struct {
	agent  string
	cmd    *exec.Cmd
	stderr *capped
	done   chan struct{} // closed when it has exited
	ticks  int64         // utime+stime at the start of the window

	rssMin, rssMax int64 // VmRSS in kB over the window
}

// idleRun starts one collab watch per run on the backlog channel, waits
// until they are idle, and measures them over one window. It returns the
// CPU share (% of a core) and RSS (MB) of each.
func (b *bench) idleRun(ctx context.Context) (vals [2][]float64, err error) {
	root, err := b.backlogFixture()
	if err != nil {
		return vals, err
	}
	bin, err := b.collabBinary(ctx)
	if err != nil {
		return vals, err
	}
	var ws []*idleWatcher
	defer func() {
		for _, w := range ws {
			if serr := w.stop(); err == nil && serr != nil {
				err = serr
			}
		}
	}()
	for i := range b.runs {
		w, err := startIdle(root, bin, "idle-"+strconv.Itoa(i+1))
		if err != nil {
			return vals, err
		}
		ws = append(ws, w)
	}
	if err := waitIdle(ctx, root, ws); err != nil {
		return vals, err
	}
	t0 := time.Now()
	for _, w := range ws {
		if w.ticks, err = cpuTicks(w.cmd.Process.Pid); err != nil {
			return vals, err
		}
	}
	fmt.Fprintf(b.progress, "   %d watcher(s) idle; measuring for %v\n", len(ws), b.size.idle)
	// RSS once a second too, for the progress line: the end is one sample
	// of a sawtooth (every full rescan lists the whole folder).
	for end := t0.Add(b.size.idle); time.Now().Before(end); {
		if err := sleep(ctx, min(time.Second, time.Until(end))); err != nil {
			return vals, err
		}
		for _, w := range ws {
			if kb, err := statusKB(w.cmd.Process.Pid, "VmRSS"); err == nil {
				w.rssMin, w.rssMax = min(w.rssMin, kb), max(w.rssMax, kb)
			}
		}
	}
	for _, w := range ws {
		share, mb, err := w.measured(t0, b.progress)
		if err != nil {
			return vals, err
		}
		vals[0] = append(vals[0], share)
		vals[1] = append(vals[1], mb)
	}
	return vals, nil
}

// waitIdle waits until the watchers are idle: presence written (startup
// done), then the first listings and the 2 s settle time after them
// behind.
func waitIdle(ctx context.Context, root tree.Root, ws []*idleWatcher) error {
	for _, w := range ws {
		if err := waitFor(ctx, w.agent+" to start", func() bool {
			s, err := presence.Read(root, w.agent)
			return err == nil && s.State == presence.StateAwake || w.exited()
		}); err != nil {
			return err
		}
		if w.exited() {
			return fmt.Errorf("%s exited: %s", w.agent, tail(w.stderr.String(), 500))
		}
	}
	return sleep(ctx, 3*time.Second)
}

// measured returns the watcher's CPU share (% of a core) since t0 and its
// RSS (MB) now, and writes them to progress.
func (w *idleWatcher) measured(t0 time.Time, progress io.Writer) (share, mb float64, err error) {
	if w.exited() {
		return 0, 0, fmt.Errorf("%s exited: %s", w.agent, tail(w.stderr.String(), 500))
	}
	ticks, err := cpuTicks(w.cmd.Process.Pid)
	if err != nil {
		return 0, 0, err
	}
	wall := time.Since(t0)
	kb, err := statusKB(w.cmd.Process.Pid, "VmRSS")
	if err != nil {
		return 0, 0, err
	}
	share = float64(ticks-w.ticks) / userHZ / wall.Seconds() * 100
	mb = float64(kb) * 1024 / 1e6
	fmt.Fprintf(progress, "   %s: %.3g%% of a core (%d ticks in %v), RSS %.1f MB at the end, %.1f–%.1f MB in the window\n",
		w.agent, share, ticks-w.ticks, wall.Round(time.Millisecond), mb, float64(w.rssMin)*1024/1e6, float64(w.rssMax)*1024/1e6)
	return share, mb, nil
}

// startIdle starts collab watch for agent on the backlog channel, in a
// process group of its own, killed if the bench dies.
func startIdle(root tree.Root, bin, agent string) (*idleWatcher, error) {
	cmd := exec.Command(bin, "watch", "--root", string(root), "--agent", agent, "--channel", backlogChannel,
		"--cli", "command", "--cmd", "true", "--poll", "1s", "--allow-writable-keyring")
	cmd.Env = childEnv()
	w, err := startProc(agent, cmd)
	if err != nil {
		return nil, err
	}
	w.rssMin = math.MaxInt64
	return w, nil
}

// startProc starts cmd in a process group of its own, killed if the bench
// dies, its stderr kept.
func startProc(name string, cmd *exec.Cmd) (*idleWatcher, error) {
	w := &idleWatcher{agent: name, cmd: cmd, stderr: &capped{max: 64 << 10}, done: make(chan struct{})}
	cmd.Stderr = w.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		cmd.Wait()
		close(w.done)
	}()
	return w, nil
}

func (w *idleWatcher) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the watcher's process group, waits for it to write
// OFFLINE and exit, and kills the group after 10 s.
func (w *idleWatcher) stop() error {
	if w.exited() {
		return nil
	}
	pgid := w.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-w.done:
		return nil
	case <-time.After(10 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-w.done
		return fmt.Errorf("%s did not stop on SIGTERM; killed", w.agent)
	}
}

// cpuTicks returns utime+stime of a process, in 1/userHZ seconds, from
// /proc/PID/stat (all its threads).
func cpuTicks(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// comm, field 2, is in parentheses and may hold anything: count the
	// fields after its closing one, which is field 3 (state).
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no comm", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return utime + stime, nil
}

// statusKB returns a "Key:   N kB" line of /proc/PID/status.
func statusKB(pid int, key string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), key+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, key)
}

// capped keeps the first max bytes written to it and drops the rest. It is
// safe for a writer and a reader goroutine.
type capped struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// syncFS writes back the filesystem holding dir.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
