package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fusemount"
)

// The names every scenario uses.
const (
	chanName = "dev"
	agent    = "bot"
	sender   = "alice"
)

// harness is what the scenarios share: the binaries and the run folder.
type harness struct {
	collab   string // the collab binary
	self     string // this binary, which is also the stand-in
	dir      string // the run folder
	quick    bool
	seed     uint64
	progress io.Writer
	noBindfs error // why bindfs and FUSE do not work here; nil if they do
}

// env is one scenario's run: its tree, mounts, processes and acks.
type env struct {
	h       *harness
	name    string
	dir     string
	backing string // the tree itself (no FUSE)
	rng     *rand.Rand
	acks    ledger

	mu       sync.Mutex
	mounts   []string
	watchers []*watchProc
	notes    []string
	problems []string          // broken invariants other than the checker's
	garbage  []garbageFile     // scenario 12's foreign files
	posted   map[string]string // scenario 8's messages, by text
	remote   *remoteRun        // scenarios 13-15: the remote senders
	live     *liveModel        // scenarios 18-19: the fake model and Claude Code
	healed   time.Time         // when the fault last healed (or struck, when it never heals)
}

// heal records that the fault has healed now (the process restarted, the
// partition healed, the disk freed …), or, for a fault that never heals
// (a process killed for good), that it struck. The last call counts: the
// time to recover runs from it to the last message answered.
func (e *env) heal() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.healed = time.Now()
}

// healedAt is the time of the last heal, zero if none.
func (e *env) healedAt() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.healed
}

// watchFile is the name of the watcher's state file in its state folder
// (a private constant of package watcher, read here as a test tool).
const watchFile = "watch.json"

// statePath is the file the agent's watcher saves its state to.
func (e *env) statePath() string { return filepath.Join(tree.Root(e.backing).State(agent), watchFile) }

// logPath is the agent's watcher log, one JSON object a line.
func (e *env) logPath() string { return filepath.Join(tree.Root(e.backing).Logs(), agent+".log") }

// newRng returns a generator for one goroutine, seeded from the scenario's.
func newRng(e *env) *rand.Rand { return rand.New(rand.NewPCG(e.rng.Uint64(), e.rng.Uint64())) }

func (h *harness) newEnv(name string, n uint64) (*env, error) {
	dir, err := os.MkdirTemp(h.dir, name+"-")
	if err != nil {
		return nil, err
	}
	e := &env{h: h, name: name, dir: dir, backing: filepath.Join(dir, "tree"), rng: rand.New(rand.NewPCG(h.seed, n))}
	if err := os.MkdirAll(tree.Root(e.backing).Channel(chanName), 0o755); err != nil {
		return nil, err
	}
	return e, nil
}

// size picks the full or the -quick count.
func (e *env) size(full, quick int) int {
	if e.h.quick {
		return quick
	}
	return full
}

// note records a fact about the run for the report; problem records a
// broken invariant, which fails the run.
func (e *env) note(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.notes = append(e.notes, fmt.Sprintf(format, args...))
}

func (e *env) problem(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.problems = append(e.problems, fmt.Sprintf(format, args...))
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.h.progress, "   %s: %s\n", e.name, fmt.Sprintf(format, args...))
}

// mount makes a bindfs view of the tree, standing for another host; opts
// (such as "-o", "negative_timeout=15") come before the paths.
func (e *env) mount(ctx context.Context, host string, opts ...string) (string, error) {
	at := filepath.Join(e.dir, host)
	e.mu.Lock()
	e.mounts = append(e.mounts, at)
	e.mu.Unlock()
	return at, fusemount.Bindfs(ctx, e.backing, at, opts...)
}

// close ends every watcher still running (SIGTERM, then SIGKILL), resuming
// stopped ones first, and unmounts every mount.
func (e *env) close() {
	e.mu.Lock()
	ws, ms := e.watchers, e.mounts
	e.watchers, e.mounts = nil, nil
	e.mu.Unlock()
	for _, w := range ws {
		w.terminate(10 * time.Second)
	}
	for _, m := range ms {
		if err := fusemount.Unmount(m); err != nil {
			fmt.Fprintf(e.h.progress, "   %s: %v\n", e.name, err)
		}
	}
}

// watchOpts are one watcher's settings.
type watchOpts struct {
	root       string        // the tree as this "host" sees it
	label      string        // names the watcher's log file
	delay      time.Duration // the stand-in's fixed delay
	jitter     time.Duration // and its jitter
	claimGrace time.Duration // default 5 s
	heartbeat  time.Duration // default 1 s
	poll       time.Duration // default 200 ms
	noNotify   bool
	noDAC      bool     // as root: without the capabilities that bypass file modes
	env        []string // more KEY=VALUE for the watcher
	baseEnv    []string // the watcher's environment before env; nil: childEnv()
	args       []string // more flags for collab watch
}

// watchProc is one `collab watch` process.
type watchProc struct {
	cmd   *exec.Cmd
	label string
	log   string // its stderr
	done  chan struct{}
	err   error // after done
	ended bool  // the harness ended it (SIGKILL or SIGTERM)
}

// startWatcher starts `collab watch` for the agent on the channel and, if
// ready, waits until it logs that it is watching.
func (e *env) startWatcher(ctx context.Context, o watchOpts, ready bool) (*watchProc, error) {
	o.claimGrace = cmpOr(o.claimGrace, 5*time.Second)
	o.heartbeat = cmpOr(o.heartbeat, time.Second)
	o.poll = cmpOr(o.poll, 200*time.Millisecond)
	standin := fmt.Sprintf("'%s' %s --delay %s --jitter %s", e.h.self, standinArg, o.delay, o.jitter)
	args := []string{"watch", "--root", o.root, "--agent", agent, "--channel", chanName,
		"--cli", "command", "--cmd", standin,
		"--poll", o.poll.String(), "--heartbeat", o.heartbeat.String(),
		"--claim-grace", o.claimGrace.String(), "--grace", "5s", "--timeout", "30s",
		"--rate", "-1", "--pair-rate", "-1", "--context", "2",
		// The checks count skips, and "not addressed" is a debug record.
		"--log-level", "debug"}
	if o.noNotify {
		args = append(args, "--no-fsnotify")
	}
	args = append(args, o.args...)
	label := cmpOr(o.label, "watch")
	logPath := filepath.Join(e.dir, label+".stderr")
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	argv := append([]string{e.h.collab}, args...)
	if o.noDAC && os.Geteuid() == 0 {
		// Dropped from the bounding set, the capabilities are gone after
		// exec even for uid 0: file modes bind the watcher.
		argv = append([]string{"setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	base := childEnv()
	if o.baseEnv != nil {
		base = o.baseEnv
	}
	cmd.Env = append(slices.Clip(base), o.env...)
	cmd.Stdout, cmd.Stderr = f, f
	off, _ := f.Seek(0, io.SeekEnd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &watchProc{cmd: cmd, label: label, log: logPath, done: make(chan struct{})}
	go func() {
		w.err = cmd.Wait()
		close(w.done)
	}()
	e.mu.Lock()
	e.watchers = append(e.watchers, w)
	e.mu.Unlock()
	if !ready {
		return w, nil
	}
	for deadline := time.Now().Add(15 * time.Second); ; {
		if logged(logPath, off, "msg=watching") {
			return w, nil
		}
		select {
		case <-w.done:
			return nil, fmt.Errorf("watcher %s exited at start: %v: %s", label, w.err, tailFile(logPath, 800))
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("watcher %s not watching after 15 s: %s", label, tailFile(logPath, 800))
		}
	}
}

func (w *watchProc) pid() int { return w.cmd.Process.Pid }

func (w *watchProc) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// kill ends the watcher with SIGKILL and waits for it.
func (w *watchProc) kill() {
	w.ended = true
	w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
}

func (w *watchProc) signal(sig syscall.Signal) { w.cmd.Process.Signal(sig) }

// terminate resumes the watcher, asks it to stop with SIGTERM and kills it
// if it has not within d. It reports whether it stopped by itself.
func (w *watchProc) terminate(d time.Duration) bool {
	if w.exited() {
		return true
	}
	w.ended = true
	w.cmd.Process.Signal(syscall.SIGCONT)
	w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
		return true
	case <-time.After(d):
		w.kill()
		return false
	}
}

// send posts a message to the agent with a real `collab send` process on
// root; the ack is the process returning with the new id.
func (e *env) send(ctx context.Context, root, from, text string) (ack, error) {
	return e.sendWith(ctx, root, from, text, nil)
}

// sendWith is send with more KEY=VALUE in the child's environment.
func (e *env) sendWith(ctx context.Context, root, from, text string, extra []string) (ack, error) {
	return e.sendTo(ctx, root, chanName, from, text, extra)
}

// sendIn is send to channel ch.
func (e *env) sendIn(ctx context.Context, root, ch, from, text string) (ack, error) {
	return e.sendTo(ctx, root, ch, from, text, nil)
}

func (e *env) sendTo(ctx context.Context, root, ch, from, text string, extra []string) (ack, error) {
	cmd := exec.CommandContext(ctx, e.h.collab, "send", "--root", root, "--agent", from,
		"--channel", ch, "--to", agent, "--text", text)
	cmd.Env = append(childEnv(), extra...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return ack{}, fmt.Errorf("collab send: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	a := ack{ID: strings.TrimSpace(stdout.String()), Text: text, At: time.Now()}
	if _, err := channel.ParseID(a.ID); err != nil {
		return ack{}, fmt.Errorf("collab send printed %q: %v", a.ID, err)
	}
	e.acks.add(a)
	return a, nil
}

// post posts a message to the agent in this process; the ack is Post
// returning. m may carry a fixed id.
func (e *env) post(w *channel.Writer, m *channel.Message) (ack, error) {
	m.SessionID, m.To = chanName, agent
	if err := w.Post(m); err != nil {
		return ack{}, err
	}
	a := ack{ID: m.ID, Text: m.Content.Text, At: time.Now()}
	e.acks.add(a)
	return a, nil
}

// await waits until every acked message has a reply or until d has passed,
// then lets the watchers run for settle more (time for a late duplicate).
func (e *env) await(ctx context.Context, d, settle time.Duration) error {
	if e.healedAt().IsZero() {
		e.heal() // a fault over every send (a cache, a race): healed with the last
	}
	acks := e.acks.snapshot()
	s := newScanner(tree.Root(e.backing).Channel(chanName), chanName, agent)
	start, last, lastN := time.Now(), time.Now(), -1
	for deadline := start.Add(d); ; {
		n, err := s.answered(acks)
		if err != nil {
			return err
		}
		if n == len(acks) {
			e.logf("all %d answered %v after the last send", n, time.Since(start).Round(time.Millisecond))
			break
		}
		if n != lastN && time.Since(last) > 5*time.Second {
			e.logf("%d of %d answered", n, len(acks))
			last, lastN = time.Now(), n
		}
		if time.Now().After(deadline) {
			e.logf("gave up waiting after %v: %d of %d answered", d, n, len(acks))
			break
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
	return sleep(ctx, settle)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// between returns a duration in [lo, hi) from rng.
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// childEnv is the environment of collab children: this one without
// COLLAB_* and NATS_* (no root, agent or NATS server from the caller).
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "COLLAB_") && !strings.HasPrefix(kv, "NATS_") {
			env = append(env, kv)
		}
	}
	return env
}

// logged reports whether the file, from offset off, has a line containing s.
func logged(path string, off int64, s string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return false
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			return true
		}
	}
	return false
}

// tailFile returns the last n bytes of a file.
func tailFile(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return strings.TrimSpace(string(data))
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
