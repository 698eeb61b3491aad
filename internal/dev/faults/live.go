package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// Scenarios 18 and 19 run `collab watch --live --cli claude` with the real
// Claude Code (found as the tests find it: $COLLAB_CLI_BIN_DIR, then
// fakemodel.DefaultBinDir, then PATH) against a fakemodel.Server started
// in this process on 127.0.0.1. The watcher gets the environment
// fakemodel.Setup makes for the CLI (a fresh HOME, the server's URL, no
// vendor variables of the caller), which its CLI processes inherit.
//
// The fake model answers each model call as the stand-in would: it reads
// the id of the message to answer from the prompt ("ID: …", in the first
// prompt and in a live follow-up alike), the message from the tree, and
// answers expectedReply, so the checker scores the run as any other.
// Without the binary a scenario is skipped, or fails when
// $COLLAB_TEST_REQUIRE_CLIS is "1" (CI).

// liveModel is a live scenario's model: the fake server, the real Claude
// Code set up to talk to it, and the model calls it has answered.
type liveModel struct {
	e     *env
	srv   *fakemodel.Server
	cli   *fakemodel.CLI
	chans []string // the channels the watcher watches
	// shape, if set, changes the answer to a model call (delays it, hangs
	// it): call is 1 for the first model call for that message, 2 for the
	// next, ….
	shape func(ch string, m channel.Message, call int, rep fakemodel.Reply) fakemodel.Reply

	mu    sync.Mutex
	calls map[string]int // model calls by message id
	wake  chan struct{}  // closed and replaced on every model call
}

// startLiveModel finds Claude Code, starts the fake model, sets the CLI up
// in the scenario's folder, and makes the channels.
func startLiveModel(e *env, chans ...string) (*liveModel, error) {
	path, err := fakemodel.FindCLI(fakemodel.ClaudeCode)
	if err != nil {
		return nil, errSkip{why: "the real Claude Code is not installed: " + err.Error(), require: fakemodel.RequireEnv}
	}
	for _, ch := range chans {
		if err := os.MkdirAll(tree.Root(e.backing).Channel(ch), 0o755); err != nil {
			return nil, err
		}
	}
	base := filepath.Join(e.dir, "claude")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	l := &liveModel{e: e, srv: fakemodel.Start(nil), chans: chans,
		calls: make(map[string]int), wake: make(chan struct{})}
	if l.cli, err = l.srv.Setup(fakemodel.ClaudeCode, path, base); err != nil {
		l.srv.Close()
		return nil, err
	}
	l.srv.Script(l.answer)
	e.mu.Lock()
	e.live = l
	e.mu.Unlock()
	return l, nil
}

func (l *liveModel) close() { l.srv.Close() }

// answer is the fake model's script.
func (l *liveModel) answer(r fakemodel.Request) fakemodel.Reply {
	id := promptID(r.Prompt())
	ch, m, ok := l.lookup(id)
	if !ok {
		// Posted as a reply, it is scored corrupt.
		return fakemodel.Text(fmt.Sprintf("fakemodel: no message %q of the prompt in the channels", id))
	}
	l.mu.Lock()
	l.calls[id]++
	n := l.calls[id]
	close(l.wake)
	l.wake = make(chan struct{})
	l.mu.Unlock()
	rep := fakemodel.Text(expectedReply(id, m.Content.Text))
	if l.shape != nil {
		rep = l.shape(ch, m, n, rep)
	}
	return rep
}

// promptID is the id of the message a prompt asks to answer: the last
// "ID: " line (the built-in prompt and the live follow-up both end with
// the message).
func promptID(prompt string) string {
	i := strings.LastIndex(prompt, "\nID: ")
	if i < 0 {
		return ""
	}
	id, _, _ := strings.Cut(prompt[i+len("\nID: "):], "\n")
	return strings.TrimSpace(id)
}

// lookup finds message id in one of the channels.
func (l *liveModel) lookup(id string) (string, channel.Message, bool) {
	if _, err := channel.ParseID(id); err != nil {
		return "", channel.Message{}, false
	}
	for _, ch := range l.chans {
		if m, err := channel.Lookup(tree.Root(l.e.backing), ch, id); err == nil {
			return ch, m, true
		}
	}
	return "", channel.Message{}, false
}

// callsFor returns how many model calls message id has had.
func (l *liveModel) callsFor(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[id]
}

// waitCall waits, for at most d, until cond holds; it is checked on every
// model call and every 100 ms (for conditions on files).
func (l *liveModel) waitCall(ctx context.Context, d time.Duration, what string, cond func() bool) error {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		wake := l.wake
		l.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-wake:
		case <-time.After(100 * time.Millisecond):
		case <-deadline.C:
			return fmt.Errorf("waited %v for %s in vain", d, what)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// watchOpts are the options of a live watcher of l's channels: Claude Code
// as --cmd, --live, and the CLI's environment instead of the harness's.
func (l *liveModel) watchOpts() watchOpts {
	args := []string{"--cli", "claude", "--cmd", "'" + l.cli.Path + "'", "--live", "--workdir", l.cli.Dir}
	for _, ch := range l.chans {
		if ch != chanName { // startWatcher names chanName
			args = append(args, "--channel", ch)
		}
	}
	var env []string
	for _, kv := range l.cli.Env {
		if !strings.HasPrefix(kv, "COLLAB_") && !strings.HasPrefix(kv, "NATS_") {
			env = append(env, kv)
		}
	}
	return watchOpts{root: l.e.backing, args: args, baseEnv: env}
}

// send posts a message to the agent in channel ch with `collab send`; the
// ack goes to the scenario's ledger (ids are unique across channels).
func (l *liveModel) send(ctx context.Context, ch, text string) (ack, error) {
	return l.e.sendIn(ctx, l.e.backing, ch, sender, text)
}

// answered returns the acked messages with a reply, in any of the channels.
func (l *liveModel) answered(scanners []*scanner, acks map[string]ack) (map[string]bool, error) {
	done := make(map[string]bool)
	for _, s := range scanners {
		if err := s.scan(); err != nil {
			return nil, err
		}
		for id := range acks {
			if len(s.replies[id]) > 0 {
				done[id] = true
			}
		}
	}
	return done, nil
}

func (l *liveModel) scanners() []*scanner {
	var ss []*scanner
	for _, ch := range l.chans {
		ss = append(ss, newScanner(tree.Root(l.e.backing).Channel(ch), ch, agent))
	}
	return ss
}

// await waits until every acked message has a reply in its channel, or d
// has passed, then settle more for late duplicates.
func (l *liveModel) await(ctx context.Context, d, settle time.Duration) error {
	if l.e.healedAt().IsZero() {
		l.e.heal() // as env.await: healed with the last send
	}
	ss := l.scanners()
	start := time.Now()
	for deadline := start.Add(d); ; {
		acks := l.e.acks.snapshot()
		done, err := l.answered(ss, acks)
		if err != nil {
			return err
		}
		if len(done) == len(acks) {
			l.e.logf("all %d answered after %v", len(acks), time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			l.e.logf("gave up waiting after %v: %d of %d answered", d, len(done), len(acks))
			break
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return sleep(ctx, settle)
}

// liveVerdict scores a live scenario over all its channels: the replies
// of every channel against every ack.
func liveVerdict(e *env) (verdict, error) {
	l := e.live
	if l == nil { // skipped, or failed before the model started
		return check(tree.Root(e.backing).Channel(chanName), chanName, agent, e.acks.snapshot())
	}
	replies := make(map[string][]reply)
	var bad []string
	for _, s := range l.scanners() {
		if err := s.scan(); err != nil {
			return verdict{}, err
		}
		for id, rs := range s.replies {
			replies[id] = append(replies[id], rs...)
		}
		bad = append(bad, s.bad...)
	}
	return score(replies, bad, e.acks.snapshot()), nil
}

// liveLogLine is a line of the watcher's JSON log about live processes.
type liveLogLine struct {
	Msg     string `json:"msg"`
	Key     string `json:"key"`
	PID     int    `json:"pid"`
	Resume  string `json:"resume"`
	Session string `json:"session"`
}

// liveLog returns the lines of the agent's JSON log from offset off that
// are about live processes ("live process …").
func liveLog(e *env, off int64) ([]liveLogLine, error) {
	data, err := readFrom(e.logPath(), off)
	if err != nil {
		return nil, err
	}
	var out []liveLogLine
	for line := range bytes.Lines(data) {
		var l liveLogLine
		if json.Unmarshal(line, &l) == nil && strings.HasPrefix(l.Msg, "live process") {
			out = append(out, l)
		}
	}
	return out, nil
}

// started returns, by session key, the last "live process started" line
// of lines.
func started(lines []liveLogLine) map[string]liveLogLine {
	out := make(map[string]liveLogLine)
	for _, l := range lines {
		if l.Msg == "live process started" {
			out[l.Key] = l
		}
	}
	return out
}

// groupMembers returns the processes (not zombies) whose process group is
// one of pgids, from /proc.
func groupMembers(pgids []int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold anything, the last
		// ')' ends it.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(data[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if pgrp, err := strconv.Atoi(f[2]); err == nil && slices.Contains(pgids, pgrp) {
			out = append(out, pid)
		}
	}
	return out
}

// runningJob waits until the job record of message id in ch is running
// with its CLI's pid.
func runningJob(ctx context.Context, e *env, ch, id string) (jobs.Job, error) {
	for deadline := time.Now().Add(20 * time.Second); ; {
		j, err := jobs.ForMessage(tree.Root(e.backing), agent, ch, id)
		if err == nil && j.Status == jobs.Running && j.PID > 0 {
			return j, nil
		}
		if time.Now().After(deadline) {
			return j, fmt.Errorf("no running job with a pid for %s after 20 s: %v", id, err)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return j, err
		}
	}
}

// liveCLIKill (scenario 18): one watcher --live, a burst of messages in
// one channel (one session key, one warm Claude Code answering them in
// turn). The model call of the message in the middle hangs (fakemodel's
// Hung: the first chunk, then nothing); once it has arrived, the CLI
// process running that turn (its pid from the job record) is SIGKILLed.
// The pool must start another process resuming the session and redo the
// turn: every message answered once, the victim by a new process in the
// same session, whose model call carries the earlier turns.
func liveCLIKill(ctx context.Context, e *env) error {
	l, err := startLiveModel(e, chanName)
	if err != nil {
		return err
	}
	defer l.close()
	n := e.size(10, 6)
	firstText, victimText := fmt.Sprintf("s18 message 1 of %d", n), fmt.Sprintf("s18 message %d of %d", n/2, n)
	l.shape = func(_ string, m channel.Message, call int, rep fakemodel.Reply) fakemodel.Reply {
		if m.Content.Text == victimText && call == 1 {
			return rep.Hung()
		}
		return rep
	}
	off := fileSize(e.logPath())
	if _, err := e.startWatcher(ctx, l.watchOpts(), true); err != nil {
		return err
	}
	var first, victim ack
	for i := range n {
		a, err := l.send(ctx, chanName, fmt.Sprintf("s18 message %d of %d", i+1, n))
		if err != nil {
			return err
		}
		switch a.Text {
		case firstText:
			first = a
		case victimText:
			victim = a
		}
	}
	if err := l.waitCall(ctx, time.Minute, "the hung model call", func() bool { return l.callsFor(victim.ID) > 0 }); err != nil {
		return err
	}
	j, err := runningJob(ctx, e, chanName, victim.ID)
	if err != nil {
		return err
	}
	e.logf("SIGKILL the CLI (pid %d, %d processes in its group) mid-turn", j.PID, len(groupMembers([]int{j.PID})))
	if err := syscall.Kill(j.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill the CLI %d: %w", j.PID, err)
	}
	e.heal() // never heals: the pool starts another process by itself
	if err := l.await(ctx, time.Minute, 2*time.Second); err != nil {
		return err
	}
	liveKillChecks(e, l, off, j.PID, first, victim)
	return nil
}

// liveKillChecks checks what scenario 18's kill must have led to: the pool
// logged the death and started a process resuming the session, the
// victim's job ended completed by that process, and the redone model call
// carried the first message (the session was resumed, not started anew).
func liveKillChecks(e *env, l *liveModel, off int64, killed int, first, victim ack) {
	root := tree.Root(e.backing)
	fj, err := jobs.ForMessage(root, agent, chanName, first.ID)
	if err != nil || fj.Session == "" {
		e.problem("the first message's job has no session: %v", err)
		return
	}
	lines, err := liveLog(e, off)
	if err != nil {
		e.problem("watcher log: %v", err)
		return
	}
	died, resumed := false, false
	for _, ln := range lines {
		switch {
		case ln.Msg == "live process died mid-turn; restarting it and redoing the turn" && ln.PID == killed:
			died = true
		case died && ln.Msg == "live process started" && ln.Resume == fj.Session:
			resumed = true
		}
	}
	if !died || !resumed {
		e.problem("the pool logged the death of pid %d: %v; then started a process resuming session %s: %v", killed, died, fj.Session, resumed)
	}
	vj, err := jobs.ForMessage(root, agent, chanName, victim.ID)
	switch {
	case err != nil:
		e.problem("the victim's job: %v", err)
	case vj.Status != jobs.Completed || vj.PID == killed || vj.PID <= 0 || vj.Session != fj.Session:
		e.problem("the victim's job: %s by pid %d in session %q; want completed by a new process (not %d) in %q",
			vj.Status, vj.PID, vj.Session, killed, fj.Session)
	}
	if proc.PIDAlive(killed) {
		e.problem("the killed CLI %d is still there", killed)
	}
	var calls []fakemodel.Request
	for _, r := range l.srv.Requests() {
		if promptID(r.Prompt()) == victim.ID {
			calls = append(calls, r)
		}
	}
	if len(calls) != 2 {
		e.problem("the victim had %d model calls, want 2 (the hung one and the redo)", len(calls))
	} else if !strings.Contains(calls[1].Transcript(), first.Text) {
		e.problem("the redone model call does not carry the first message: the session was not resumed")
	}
	if vj.PID != killed {
		e.note("CLI pid %d SIGKILLed mid-turn (the hung model call of %s); redone by pid %d in session %s",
			killed, victim.ID, vj.PID, vj.Session)
	}
}

// liveChannels are scenario 19's channels: three session keys.
var liveChannels = []string{chanName, "ops", "qa"}

// liveWatcherKill (scenario 19): one watcher --live of three channels,
// so three session keys, each with a warm Claude Code (after a first
// message in each). A burst in every channel (the watcher runs one turn
// at a time, the other channels' messages wait), and the watcher
// SIGKILLed while the first burst turn of the last channel runs (its
// model call hung): none of its CLI processes (nor anything in their
// process groups) may outlive it by more than orphanWait (Pdeathsig on
// Linux, the end of their input). Messages sent while it is down, then
// the watcher restarted: every message answered once, each channel's
// process resuming its session.
func liveWatcherKill(ctx context.Context, e *env) error {
	l, err := startLiveModel(e, liveChannels...)
	if err != nil {
		return err
	}
	defer l.close()
	per, down := e.size(4, 3), 2
	last := l.chans[len(l.chans)-1]
	victimText := fmt.Sprintf("s19 burst 1 of %d in #%s", per, last)
	l.shape = func(_ string, m channel.Message, call int, rep fakemodel.Reply) fakemodel.Reply {
		if m.Content.Text == victimText && call == 1 {
			return rep.Hung()
		}
		return rep
	}
	o := l.watchOpts()
	off := fileSize(e.logPath())
	w, err := e.startWatcher(ctx, o, true)
	if err != nil {
		return err
	}
	if err := liveWarmUp(ctx, l); err != nil {
		return err
	}
	var victim ack
	for i := range per {
		for _, ch := range l.chans {
			a, err := l.send(ctx, ch, fmt.Sprintf("s19 burst %d of %d in #%s", i+1, per, ch))
			if err != nil {
				return err
			}
			if a.Text == victimText {
				victim = a
			}
		}
	}
	if err := l.waitCall(ctx, 60*time.Second, "the hung model call", func() bool { return l.callsFor(victim.ID) > 0 }); err != nil {
		return err
	}
	pids, err := livePIDs(e, off, len(l.chans))
	if err != nil {
		return err
	}
	members := groupMembers(pids)
	w.kill()
	killed := time.Now()
	e.logf("watcher SIGKILLed mid-turn with live CLIs %v (%d processes in their groups)", pids, len(members))
	if err := orphans(ctx, e, pids, len(members), killed); err != nil {
		return err
	}
	for i := range down {
		for _, ch := range l.chans {
			if _, err := l.send(ctx, ch, fmt.Sprintf("s19 while down %d of %d in #%s", i+1, down, ch)); err != nil {
				return err
			}
		}
	}
	off = fileSize(e.logPath())
	if _, err := e.startWatcher(ctx, o, true); err != nil {
		return err
	}
	e.heal()
	if err := l.await(ctx, time.Minute, 2*time.Second); err != nil {
		return err
	}
	return liveResumed(e, l, off)
}

// liveWarmUp sends one message to each channel and waits for the
// replies: each channel then has its warm process.
func liveWarmUp(ctx context.Context, l *liveModel) error {
	for _, ch := range l.chans {
		if _, err := l.send(ctx, ch, "s19 warm-up in #"+ch); err != nil {
			return err
		}
	}
	return l.await(ctx, time.Minute, 0)
}

// livePIDs returns the pids of the live processes the watcher's log (from
// off) says it started last, one per session key; there must be n keys.
func livePIDs(e *env, off int64, n int) ([]int, error) {
	lines, err := liveLog(e, off)
	if err != nil {
		return nil, err
	}
	byKey := started(lines)
	if len(byKey) != n {
		return nil, fmt.Errorf("the watcher started live processes for %d session keys, want %d", len(byKey), n)
	}
	var pids []int
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		if !proc.PIDAlive(byKey[k].PID) {
			return nil, fmt.Errorf("the live process %d of %s is gone before the kill", byKey[k].PID, k)
		}
		pids = append(pids, byKey[k].PID)
	}
	return pids, nil
}

// liveResumed checks that the restarted watcher's live processes (its log
// from off) resumed their sessions.
func liveResumed(e *env, l *liveModel, off int64) error {
	lines, err := liveLog(e, off)
	if err != nil {
		return err
	}
	byKey := started(lines)
	resumed := 0
	for _, ln := range byKey {
		if ln.Resume != "" {
			resumed++
		}
	}
	e.note("after the restart, %d of %d live processes resumed their session", resumed, len(byKey))
	if resumed != len(l.chans) {
		e.problem("after the restart, %d of %d channels' processes resumed a session, want all", resumed, len(l.chans))
	}
	return nil
}

// orphanWait is how long the live CLIs may outlive their watcher.
const orphanWait = 5 * time.Second

// orphans waits until no process of the groups pgids remains; any left
// after orphanWait is a problem (and is killed).
func orphans(ctx context.Context, e *env, pgids []int, before int, killed time.Time) error {
	for {
		left := groupMembers(pgids)
		if len(left) == 0 {
			e.note("%d live CLIs (%d processes in their groups) gone %v after the watcher's SIGKILL", len(pgids), before,
				time.Since(killed).Round(time.Millisecond))
			return nil
		}
		if time.Since(killed) > orphanWait {
			e.problem("orphaned CLI processes %v still there %v after the watcher's SIGKILL", left, orphanWait)
			for _, pg := range pgids {
				syscall.Kill(-pg, syscall.SIGKILL)
			}
			return nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return errors.Join(err, fmt.Errorf("processes %v left", left))
		}
	}
}
