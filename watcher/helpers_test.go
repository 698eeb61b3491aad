package watcher_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/syncbuf"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

const (
	agent    = "codex"
	chName   = "general"
	testHost = "host-1"
	// waitLong bounds every wait for something that should happen; it is
	// only reached when a test fails.
	waitLong = 20 * time.Second
)

// syncBuffer is a log sink shared by the watcher's goroutines and the test.
type syncBuffer struct{ syncbuf.Buffer }

// records returns the JSON log records written so far.
func (s *syncBuffer) records() []map[string]any {
	var out []map[string]any
	for line := range strings.Lines(s.String()) {
		var r map[string]any
		if json.Unmarshal([]byte(line), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// find returns the log records with message msg whose attributes have the
// given values (key, value, key, value…).
func (s *syncBuffer) find(msg string, kv ...string) []map[string]any {
	var out []map[string]any
next:
	for _, r := range s.records() {
		if r["msg"] != msg {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if fmt.Sprint(r[kv[i]]) != kv[i+1] {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

// runCall is one call of a fakeRunner.
type runCall struct {
	Req modelcli.Request
	At  time.Time
	Ctx context.Context
}

func (c runCall) env(key string) string {
	for _, kv := range slices.Backward(c.Req.Env) {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

func (c runCall) msgID() string { return c.env("COLLAB_MESSAGE_ID") }

// fakeRunner is a Runner that records every request and answers with
// reply, or "reply to <message id>" when reply is nil.
type fakeRunner struct {
	reply func(c runCall) (modelcli.Response, error)

	mu    sync.Mutex
	calls []runCall
	// started, if set, receives every call (or gives up when the run's
	// ctx is done).
	started chan runCall
}

func (f *fakeRunner) Run(ctx context.Context, req modelcli.Request) (modelcli.Response, error) {
	c := runCall{Req: req, At: time.Now(), Ctx: ctx}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	if f.started != nil {
		select {
		case f.started <- c:
		case <-ctx.Done():
		}
	}
	if f.reply != nil {
		return f.reply(c)
	}
	return modelcli.Response{Text: "reply to " + c.msgID()}, nil
}

func (f *fakeRunner) Calls() []runCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// callsFor returns the calls made for message id.
func (f *fakeRunner) callsFor(id string) []runCall {
	var out []runCall
	for _, c := range f.Calls() {
		if c.msgID() == id {
			out = append(out, c)
		}
	}
	return out
}

// calledIDs returns the message ids the runner was called for, in order.
func (f *fakeRunner) calledIDs() []string {
	var out []string
	for _, c := range f.Calls() {
		out = append(out, c.msgID())
	}
	return out
}

// blockUntil returns a reply function that waits for release (or the
// run's ctx) before answering.
func blockUntil(release <-chan struct{}) func(runCall) (modelcli.Response, error) {
	return func(c runCall) (modelcli.Response, error) {
		select {
		case <-release:
			return modelcli.Response{Text: "reply to " + c.msgID()}, nil
		case <-c.Ctx.Done():
			return modelcli.Response{}, c.Ctx.Err()
		}
	}
}

// config returns a fast watcher configuration for tests: the runaway
// guards other than the hop limit are off unless a test turns them on.
func config(root tree.Root, r watcher.Runner) watcher.Config {
	return watcher.Config{
		Root:      root,
		Agent:     agent,
		Channels:  []string{chName},
		Host:      testHost,
		Runner:    r,
		Poll:      20 * time.Millisecond,
		Heartbeat: 50 * time.Millisecond,
		Grace:     2 * time.Second,
		Rate:      -1,
		PairRate:  -1,
	}
}

// presenceLog is a Publisher that keeps every presence the watcher wrote
// (it publishes each one it writes), so a test can see a state that lasts
// too short a time to be read from the presence file.
type presenceLog struct {
	mu   sync.Mutex
	list []presence.Status
}

func (p *presenceLog) PublishMessage(context.Context, *channel.Message) error { return nil }

func (p *presenceLog) PublishPresence(s presence.Status) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, s)
	return nil
}

// saw reports whether the watcher wrote presence AWAKE/substate for
// message msgID.
func (p *presenceLog) saw(substate, msgID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.list, func(s presence.Status) bool {
		return s.State == presence.StateAwake && s.Substate == substate && s.MessageID == msgID
	})
}

// harness is one watcher.Run in a goroutine.
type harness struct {
	t      testing.TB
	cfg    watcher.Config
	logs   *syncBuffer
	cancel context.CancelFunc
	exited chan struct{}
	err    error // Run's result, once exited is closed
}

// start runs a watcher with cfg until the test ends, and waits until it
// is watching (its first poll may still be to come; messages posted from
// now on are new to it).
func start(t testing.TB, cfg watcher.Config) *harness {
	t.Helper()
	h := startNoWait(t, cfg)
	waitFor(t, "the watcher to start", func() bool {
		select {
		case <-h.exited:
			t.Fatalf("Run returned early: %v", h.err)
		default:
		}
		return len(h.logs.find("watching")) > 0
	})
	return h
}

func startNoWait(t testing.TB, cfg watcher.Config) *harness {
	t.Helper()
	logs := &syncBuffer{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, cfg: cfg, logs: logs, cancel: cancel, exited: make(chan struct{})}
	go func() {
		defer close(h.exited)
		h.err = watcher.Run(ctx, cfg)
	}()
	t.Cleanup(func() {
		h.stop()
		if t.Failed() {
			t.Logf("log of watcher %s on %s:\n%s", cfg.Agent, cfg.Host, logs)
		}
	})
	return h
}

// stop cancels the watcher and waits for Run to return.
func (h *harness) stop() error {
	h.t.Helper()
	h.cancel()
	select {
	case <-h.exited:
	case <-time.After(waitLong + h.cfg.Grace):
		h.t.Errorf("watcher %s on %s: Run did not return after cancel", h.cfg.Agent, h.cfg.Host)
	}
	return h.err
}

// waitFor polls cond until it holds, and fails the test if it does not
// within waitLong.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitForIn(t, waitLong, what, cond)
}

func waitForIn(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// holds checks that cond stays true for d (for things that must not
// happen, there is no event to wait for).
//
// Tests that assert something about time (a guard holds for some polls, a
// grace period, a claim kept alive by heartbeats) run in a synctest bubble
// (synctest.Test): the watcher's tickers, its Now and these waits use the
// bubble's clock, which moves only when every goroutine of the test is
// blocked, so "for 10 polls" means 10 polls however loaded the machine,
// and waiting costs no real time. Tests with subprocesses, fsnotify, NATS or
// bindfs mounts stay on real time.
func holds(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if !cond() {
			t.Fatalf("%s: no longer true", what)
		}
	}
}

// post posts m into chName (defaults: from alice) and returns it.
func post(t testing.TB, root tree.Root, m channel.Message) channel.Message {
	t.Helper()
	if m.SessionID == "" {
		m.SessionID = chName
	}
	if m.From == "" {
		m.From = "alice"
	}
	if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
		t.Fatalf("post %q: %v", m.Content.Text, err)
	}
	return m
}

// send posts text from alice to recipient.
func send(t testing.TB, root tree.Root, to, text string) channel.Message {
	t.Helper()
	return post(t, root, channel.Message{To: to, Content: channel.Content{Text: text}})
}

// messages returns every message of chName (files that are not messages
// are left out).
func messages(t testing.TB, root tree.Root) []channel.Message {
	t.Helper()
	msgs, _, err := channel.ReadAll(root, chName, channel.ReaderOptions{})
	if err != nil {
		t.Fatalf("read channel: %v", err)
	}
	return msgs
}

// repliesTo returns the messages that answer id (notices, questions and
// delivery reports excluded).
func repliesTo(msgs []channel.Message, id string) []channel.Message {
	var out []channel.Message
	for _, m := range msgs {
		if m.Metadata.InReplyTo == id && m.Type != "notice" && !m.IsQuestion() && !m.IsDeliveryReport() {
			out = append(out, m)
		}
	}
	return out
}

func notices(msgs []channel.Message) []channel.Message {
	var out []channel.Message
	for _, m := range msgs {
		if m.Type == "notice" {
			out = append(out, m)
		}
	}
	return out
}

// waitReplies waits until every one of ids has at least one reply, and
// returns the channel's messages.
func waitReplies(t testing.TB, root tree.Root, ids ...string) []channel.Message {
	t.Helper()
	var msgs []channel.Message
	waitFor(t, fmt.Sprintf("replies to %d messages", len(ids)), func() bool {
		msgs = messages(t, root)
		for _, id := range ids {
			if len(repliesTo(msgs, id)) == 0 {
				return false
			}
		}
		return true
	})
	return msgs
}

// readClaim returns agent's claim of message id in chName.
func readClaim(root tree.Root, agent, id string) (claim.Claim, error) {
	s := &claim.Store{Root: root, Self: claim.Owner{Agent: agent}}
	return s.Read(chName, id)
}

// waitClaim waits until agent's claim of id is no longer "working", and
// returns it.
func waitClaim(t testing.TB, root tree.Root, agent, id string) claim.Claim {
	t.Helper()
	var c claim.Claim
	waitFor(t, "the claim of "+id+" to be finished", func() bool {
		var err error
		c, err = readClaim(root, agent, id)
		return err == nil && c.Status != claim.Working
	})
	return c
}

func readPresence(t testing.TB, root tree.Root, agent string) presence.Status {
	t.Helper()
	s, err := presence.Read(root, agent)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("presence: %v", err)
	}
	return s
}

// waitSettled waits until the (only) watcher of agent has nothing left to
// do: idle with an empty queue.
func waitSettled(t testing.TB, root tree.Root, agent string) {
	t.Helper()
	waitFor(t, agent+" to be idle with an empty queue", func() bool {
		s := readPresence(t, root, agent)
		return s.State == presence.StateAwake && s.Substate == presence.SubIdle && s.Queue == 0
	})
}

// ids returns the ids of msgs.
func ids(msgs ...channel.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// The test binary doubles as a fake model CLI and as a watcher process
// that can be killed, the way os/exec tests itself: helperArgs is the
// argument vector that runs TestHelperCLI in a child with a mode.
const helperMarker = "collab-watcher-test-helper"

func helperArgs(mode string, args ...string) []string {
	return append([]string{os.Args[0], "-test.run=^TestHelperCLI$", "--", helperMarker, mode}, args...)
}

// helperCLI is a model CLI run from the test binary.
func helperCLI(mode string, args ...string) *modelcli.Command {
	return &modelcli.Command{Argv: helperArgs(mode, args...), KillGrace: 300 * time.Millisecond}
}

// TestHelperCLI is not a test: it is the child process of helperArgs.
func TestHelperCLI(t *testing.T) {
	i := slices.Index(os.Args, "--")
	if i < 0 || i+2 >= len(os.Args) || os.Args[i+1] != helperMarker {
		return
	}
	code := helperMain(os.Args[i+2], os.Args[i+3:])
	// Not os.Exit: under the race detector that sleeps a second at exit
	// (GORACE atexit_sleep_ms), which every fake CLI run would pay.
	syscall.Exit(code)
}

// Keywords the "script" CLI looks for in its prompt.
const (
	kwExit1 = "[[exit1]]"
	kwEmpty = "[[empty]]"
	kwHang  = "[[hang]]"
	kwBig   = "[[big]]"
)

// bigOutput is what kwBig prints: 10 MB.
const bigOutput = 10 << 20

func helperMain(mode string, args []string) int {
	switch mode {
	case "script":
		// Behave as the prompt says; otherwise answer "answer".
		in, _ := io.ReadAll(os.Stdin)
		switch s := string(in); {
		case strings.Contains(s, kwExit1):
			fmt.Fprintln(os.Stderr, "warming up")
			fmt.Fprintln(os.Stderr, "boom: the model is unavailable")
			return 1
		case strings.Contains(s, kwEmpty):
			fmt.Print(" \n\t\n")
			return 0
		case strings.Contains(s, kwHang):
			signal.Ignore(syscall.SIGTERM) // only SIGKILL ends it
			time.Sleep(time.Hour)
			return 0
		case strings.Contains(s, kwBig):
			line := bytes.Repeat([]byte("x"), 1023)
			line = append(line, '\n')
			for range bigOutput / len(line) {
				os.Stdout.Write(line)
			}
			return 0
		}
		fmt.Println("answer")
		return 0
	case "capture":
		// Write standard input to args[0].
		in, err := io.ReadAll(os.Stdin)
		if err == nil {
			err = os.WriteFile(args[0], in, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("captured")
		return 0
	case "capture-arg":
		// Write args[1] (the prompt, in place of {prompt}) to args[0].
		if err := os.WriteFile(args[0], []byte(args[1]), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("captured")
		return 0
	case "watcher":
		// A watcher of agent on root args[0] with host args[1] whose CLI
		// never returns: the parent kills this process mid-run. With
		// args[2] "background" Run gets context.Background(), else a
		// context that SIGTERM cancels, as in main.
		cfg := config(tree.Root(args[0]), &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
			<-c.Ctx.Done()
			return modelcli.Response{}, c.Ctx.Err()
		}})
		cfg.Host = args[1]
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
		ctx := context.Background()
		if args[2] != "background" {
			var stop context.CancelFunc
			ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM)
			defer stop()
		}
		if err := watcher.Run(ctx, cfg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
	return 2
}

// jobFor returns the id of agent's newest job for message msg, or the id
// older watchers gave it ("job-" and msg), which names no record, when
// there is none yet.
func jobFor(root tree.Root, agent, msg string) string {
	if j, err := jobs.Lookup(root, agent, msg); err == nil {
		return j.ID
	}
	return oldID(msg)
}

// oldID is the id older watchers gave the job of a message.
func oldID(msg string) string { return "job-" + msg }
