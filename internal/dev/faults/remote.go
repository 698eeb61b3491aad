package main

// Scenarios 13 to 15: hosts without the mount (docs/remote.md, "Hosts without the
// mount"). Remote senders are separate `collab send --remote` processes,
// each agent with its own key, --state-dir (its outbox) and a --root that
// does not exist; `collab bridge` processes serve the tree; the NATS
// server with JetStream is the child process of scenario 10 (startNATS).
// The check is remoteCheck, over the files on the mount.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/remote"
)

// exitQueued is `collab send --remote`'s exit code when the message was
// kept in the outbox.
const exitQueued = 5

// remoteRun is one remote scenario's server, bridges and senders.
type remoteRun struct {
	e        *env
	port     int
	store    string
	nats     *natsProc
	url      string           // the server, as the bridges reach it
	sendURL  string           // the server, as the remote senders reach it
	absent   string           // the senders' --root: no such folder
	level    string           // the bridges' --log-level (default info)
	initArgs []string         // more flags for collab nats init
	gap      [2]time.Duration // a sender's pause between two sends; zero: 20-120 ms
	senders  []*remoteSender

	mu      sync.Mutex
	bridges map[string]*watchProc // by label
}

// remoteSender is one remote agent and what it sent.
type remoteSender struct {
	agent, key, state string

	mu       sync.Mutex
	sends    []remoteSend
	queued   int          // exit 5
	slow     int          // exit 5 after waiting out the request timeout
	failed   int          // any other exit
	snapshot []remoteSend // its outbox before the final flush
}

// remoteSend is one message a sender tried to send: the id it was told
// (exit 0), or none (exit 5: kept in its outbox), and the text.
type remoteSend struct {
	id, text string
	queued   bool
}

// newRemoteRun starts the NATS server (and makes the stream), trusts a
// key for each of n remote senders and makes their state folders.
func newRemoteRun(ctx context.Context, e *env, n int) (*remoteRun, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	r := &remoteRun{e: e, port: port, store: filepath.Join(e.dir, "nats"), absent: filepath.Join(e.dir, "no-such-mount"),
		bridges: make(map[string]*watchProc)}
	r.url = fmt.Sprintf("nats://127.0.0.1:%d", port)
	r.sendURL = r.url
	if r.nats, err = e.startNATS(ctx, port, r.store); err != nil {
		return nil, err
	}
	if err := r.setup(ctx, n); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// setup makes the stream (collab nats init, a few tries: a cluster
// elects its leader first), trusts a key for each of n remote senders
// and makes their state folders.
func (r *remoteRun) setup(ctx context.Context, n int) error {
	e := r.e
	for try := 0; ; try++ {
		init := exec.CommandContext(ctx, e.h.collab, append([]string{"nats", "init", "--root", e.backing, "--nats", r.url}, r.initArgs...)...)
		init.Env = childEnv()
		out, err := init.CombinedOutput()
		if err == nil {
			break
		}
		if try == 20 {
			return fmt.Errorf("collab nats init: %v: %s", err, out)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	ring := keyring.Open(tree.Root(e.backing).Keys())
	if err := ring.Create(); err != nil {
		return err
	}
	for i := range n {
		s := &remoteSender{agent: "rem" + strconv.Itoa(i), state: filepath.Join(e.dir, "remote-state-"+strconv.Itoa(i))}
		s.key = filepath.Join(e.dir, s.agent+".key")
		signer, err := signing.NewKey(s.key, s.agent, false)
		if err == nil {
			err = ring.Trust(s.agent, signer.PublicKey())
		}
		if err != nil {
			return err
		}
		r.senders = append(r.senders, s)
	}
	e.mu.Lock()
	e.remote = r
	e.mu.Unlock()
	return nil
}

// close kills the server; the bridges are the env's (ended with the
// watchers).
func (r *remoteRun) close() {
	if r.nats != nil {
		r.nats.kill()
	}
}

// startBridge starts `collab bridge` on the tree as label and waits until
// it logs that it serves.
func (r *remoteRun) startBridge(ctx context.Context, label string) error {
	logPath := filepath.Join(r.e.dir, label+".stderr")
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return err
	}
	defer f.Close()
	off, _ := f.Seek(0, io.SeekEnd)
	cmd := exec.Command(r.e.h.collab, "bridge", "--root", r.e.backing, "--nats", r.url, "--log-level", cmpOr(r.level, "info"))
	cmd.Env = childEnv()
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	w := &watchProc{cmd: cmd, label: label, log: logPath, done: make(chan struct{})}
	go func() {
		w.err = cmd.Wait()
		close(w.done)
	}()
	r.e.mu.Lock()
	r.e.watchers = append(r.e.watchers, w) // ended and checked as watchers are
	r.e.mu.Unlock()
	r.mu.Lock()
	r.bridges[label] = w
	r.mu.Unlock()
	for deadline := time.Now().Add(15 * time.Second); !logged(logPath, off, "bridge: serving"); {
		select {
		case <-w.done:
			return fmt.Errorf("bridge %s exited at start: %v: %s", label, w.err, tailFile(logPath, 800))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bridge %s not serving after 15 s: %s", label, tailFile(logPath, 800))
		}
	}
	return nil
}

// killBridge SIGKILLs the bridge label. With aim, it first waits (up to
// 2 s) for the bridge to log "bridge: posted", the moment the file is on
// the mount and the answer not yet sent, and returns the id it posted.
func (r *remoteRun) killBridge(ctx context.Context, label string, aim bool) (string, error) {
	r.mu.Lock()
	w := r.bridges[label]
	r.mu.Unlock()
	if !aim {
		w.kill()
		return "", nil
	}
	off := fileSize(w.log)
	follow, err := followLog(w.log, off)
	if err != nil {
		return "", err
	}
	defer follow.close()
	ok, err := follow.until(ctx, 2*time.Second, nil, "bridge: posted")
	w.kill()
	if err != nil || !ok {
		return "", err
	}
	return lastPosted(w.log, off), nil
}

// textMsg reports whether line, written by slog's text handler, has a
// msg of msgs (quoted, or bare when it is one word).
func textMsg(line []byte, msgs []string) bool {
	return slices.ContainsFunc(msgs, func(m string) bool {
		return bytes.Contains(line, []byte(`msg="`+m+`"`)) || bytes.Contains(line, []byte(` msg=`+m+` `))
	})
}

// lastPosted returns the id of the last "bridge: posted" line of a
// bridge's log from off.
func lastPosted(path string, off int64) string {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) < off {
		return ""
	}
	id := ""
	for line := range strings.Lines(string(data[off:])) {
		if _, rest, ok := strings.Cut(line, `msg="bridge: posted"`); ok {
			if _, v, ok := strings.Cut(rest, " msg="); ok {
				id, _, _ = strings.Cut(strings.TrimSpace(v), " ")
			}
		}
	}
	return id
}

// burst runs every sender at once for about d, each a `collab send
// --remote` after another, 20-120 ms apart; it returns when they stop.
func (r *remoteRun) burst(ctx context.Context, tag string, d time.Duration) <-chan error {
	done := make(chan error, 1)
	var wg sync.WaitGroup
	errs := make([]error, len(r.senders))
	start := time.Now()
	for k, s := range r.senders {
		rng := newRng(r.e)
		wg.Go(func() {
			for i := 0; time.Since(start) < d; i++ {
				if err := r.send(ctx, s, fmt.Sprintf("%s %s #%d %04x", tag, s.agent, i, rng.IntN(1<<16))); err != nil {
					errs[k] = err
					return
				}
				lo, hi := r.gap[0], r.gap[1]
				if hi == 0 {
					lo, hi = 20*time.Millisecond, 120*time.Millisecond
				}
				if err := sleep(ctx, between(rng, lo, hi)); err != nil {
					errs[k] = err
					return
				}
			}
		})
	}
	go func() {
		wg.Wait()
		done <- errors.Join(errs...)
	}()
	return done
}

// send runs one `collab send --remote` of text to the agent as s and
// records it: exit 0 (its id printed) or 5 (kept in the outbox); any
// other exit is a problem of the run.
func (r *remoteRun) send(ctx context.Context, s *remoteSender, text string) error {
	cmd := exec.CommandContext(ctx, r.e.h.collab, "send", "--remote", "--root", r.absent, "--state-dir", s.state,
		"--key", s.key, "--agent", s.agent, "--nats", r.sendURL, "--channel", chanName, "--to", agent, "--text", text)
	cmd.Env = childEnv()
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	took := time.Since(t0)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	code := cmd.ProcessState.ExitCode()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		id := strings.TrimSpace(stdout.String())
		if _, perr := channel.ParseID(id); perr != nil {
			return fmt.Errorf("collab send --remote printed %q: %v", id, perr)
		}
		s.sends = append(s.sends, remoteSend{id: id, text: text})
	case code == exitQueued:
		s.sends = append(s.sends, remoteSend{text: text, queued: true})
		s.queued++
		if took >= remote.DefaultTimeout-500*time.Millisecond {
			s.slow++ // the request was lost with a killed bridge or connection
		}
	default:
		s.failed++
		r.e.problem("collab send --remote as %s exited %d (want 0, or 5 when queued): %s", s.agent, code, clip(strings.TrimSpace(stderr.String()), 300))
	}
	return nil
}

// flush snapshots each sender's outbox, then empties it with `collab
// outbox flush --remote` (a few tries: the bridge or the server may still
// be coming back).
func (r *remoteRun) flush(ctx context.Context) error {
	for _, s := range r.senders {
		entries, err := remote.Pending(s.state)
		if err != nil {
			return fmt.Errorf("outbox of %s: %w", s.agent, err)
		}
		for _, en := range entries {
			m, err := outboxMessage(en)
			if err != nil {
				r.e.problem("outbox of %s: %s: %v", s.agent, en.Name, err)
				continue
			}
			s.snapshot = append(s.snapshot, remoteSend{id: m.ID, text: m.Content.Text, queued: true})
		}
		var out []byte
		for try := 0; ; try++ {
			cmd := exec.CommandContext(ctx, r.e.h.collab, "outbox", "flush", "--remote", "--state-dir", s.state,
				"--agent", s.agent, "--nats", r.sendURL)
			cmd.Env = childEnv()
			out, err = cmd.CombinedOutput()
			if err == nil || try == 4 {
				break
			}
			if err := sleep(ctx, time.Second); err != nil {
				return err
			}
		}
		if err != nil {
			r.e.problem("collab outbox flush --remote as %s: %v: %s", s.agent, err, clip(strings.TrimSpace(string(out)), 300))
		}
		if failed, err := remote.Refused(s.state); err != nil || len(failed) > 0 {
			var why []string
			for _, f := range failed {
				why = append(why, fmt.Sprintf("%s %s queued %s: %s", f.Op, f.Describe(), f.Queued.Format(time.RFC3339Nano), f.Refused))
			}
			r.e.problem("outbox of %s: %d write(s) refused by the bridge (failed/): %v %s", s.agent, len(failed), err, clip(strings.Join(why, "; "), 600))
		}
	}
	return nil
}

// outboxMessage decodes the message of a post entry.
func outboxMessage(en remote.Entry) (channel.Message, error) {
	var req bridge.PostRequest
	if en.Op != bridge.OpPost {
		return channel.Message{}, fmt.Errorf("op %q, not a post", en.Op)
	}
	if err := json.Unmarshal(en.Body, &req); err != nil {
		return channel.Message{}, err
	}
	var m channel.Message
	err := json.Unmarshal(req.Message, &m)
	return m, err
}

// noteSends notes what the senders saw and fails the run when the fault
// never made a send queue (it reached nothing).
func (r *remoteRun) noteSends(fault string) {
	var sent, queued, slow, snap int
	for _, s := range r.senders {
		sent += len(s.sends)
		queued += s.queued
		slow += s.slow
		snap += len(s.snapshot)
	}
	r.e.note("%d remote sends by %d `collab send --remote` processes at once: %d exited 5 (queued), %d of them after the %v request timeout (the request was lost mid-post); %d entries in the outboxes before the final flush",
		sent, len(r.senders), queued, slow, remote.DefaultTimeout, snap)
	if queued == 0 {
		r.e.problem("no send was queued: the %s reached nothing", fault)
	}
}

// bridgeKills (scenario 13): two bridges serve; while the senders send,
// one of them is SIGKILLed at a random moment and restarted 0.1-0.6 s
// later, over and over, and once both are down together for 1.5 s.
func bridgeKills(ctx context.Context, e *env) error {
	r, err := newRemoteRun(ctx, e, 3)
	if err != nil {
		return err
	}
	defer r.close()
	labels := []string{"bridge-a", "bridge-b"}
	for _, l := range labels {
		if err := r.startBridge(ctx, l); err != nil {
			return err
		}
	}
	d := time.Duration(e.size(16, 10)) * time.Second
	done := r.burst(ctx, "s13", d)
	kills, aimed, both := 0, 0, false
	var posted []string // ids the killed bridges had just posted
	start := time.Now()
	for burstDone := false; !burstDone; {
		select {
		case err := <-done:
			if err != nil {
				return err
			}
			burstDone = true
			continue
		case <-time.After(between(e.rng, 300*time.Millisecond, 1200*time.Millisecond)):
		}
		victims := []string{labels[e.rng.IntN(2)]}
		if !both && time.Since(start) > d/2 {
			victims, both = labels, true
		}
		for _, l := range victims {
			// Every other kill of one bridge aims at a post in flight.
			aim := len(victims) == 1 && kills%2 == 0
			id, err := r.killBridge(ctx, l, aim)
			if err != nil {
				return err
			}
			if aim {
				aimed++
			}
			if id != "" {
				posted = append(posted, id)
			}
			kills++
		}
		pause := between(e.rng, 100*time.Millisecond, 600*time.Millisecond)
		if len(victims) == 2 {
			pause = 1500 * time.Millisecond
			e.logf("both bridges SIGKILLed for %v", pause)
		}
		if err := sleep(ctx, pause); err != nil {
			return err
		}
		for _, l := range victims {
			if err := r.startBridge(ctx, l); err != nil {
				return err
			}
		}
		e.heal()
	}
	e.note("%d bridge SIGKILLs during the burst (one of two bridges at a time, once both for 1.5 s), each restarted", kills)
	if err := r.flush(ctx); err != nil {
		return err
	}
	r.noteSends("bridge kills")
	// A killed bridge's last post whose id its sender was never told: the
	// file was written, the answer lost, the send queued and resent (the
	// post is idempotent: the check finds it once).
	told := make(map[string]bool)
	for _, s := range r.senders {
		for _, x := range s.sends {
			if x.id != "" {
				told[x.id] = true
			}
		}
	}
	unanswered := 0
	for _, id := range posted {
		if !told[id] {
			unanswered++
		}
	}
	e.note("%d kills aimed at a bridge's \"bridge: posted\" log line (file written, answer not yet sent), %d of them landed on one: %d of those posts were never answered to their sender (queued and resent)",
		aimed, len(posted), unanswered)
	if len(posted) == 0 {
		e.problem("no kill landed just after a post: the kill point was not tested")
	}
	return nil
}

// natsRestart (scenario 14): one bridge; the NATS server is SIGKILLed a
// third into the burst, left down 3 s, and restarted on the same port and
// store.
func natsRestart(ctx context.Context, e *env) error {
	r, err := newRemoteRun(ctx, e, 3)
	if err != nil {
		return err
	}
	defer r.close()
	if err := r.startBridge(ctx, "bridge"); err != nil {
		return err
	}
	d := time.Duration(e.size(12, 9)) * time.Second
	done := r.burst(ctx, "s14", d)
	if err := sleep(ctx, d/3); err != nil {
		return err
	}
	r.nats.kill()
	e.logf("nats-server SIGKILLed")
	if err := sleep(ctx, 3*time.Second); err != nil {
		return err
	}
	if r.nats, err = e.startNATS(ctx, r.port, r.store); err != nil {
		return fmt.Errorf("restart nats-server: %w", err)
	}
	e.heal()
	e.logf("nats-server restarted")
	if err := <-done; err != nil {
		return err
	}
	e.note("nats-server SIGKILLed %v into the burst, down 3 s, restarted on the same port and store", (d / 3).Round(time.Second))
	if err := r.flush(ctx); err != nil {
		return err
	}
	r.noteSends("server restart")
	return nil
}

// partition (scenario 15): the remote senders reach the server through a
// TCP proxy of the harness. The proxy stops (its listener and every
// connection closed, one at least open: the remote host is cut off) twice
// while the senders keep sending: a quarter into the burst for cut, healed
// while they still send (their next sends resend the outbox), and at
// three quarters until after the burst, so what they queued then reaches
// the mount only through the final flush.
func partition(ctx context.Context, e *env) error {
	r, err := newRemoteRun(ctx, e, 3)
	if err != nil {
		return err
	}
	defer r.close()
	p := &tcpProxy{target: fmt.Sprintf("127.0.0.1:%d", r.port)}
	if err := p.start("127.0.0.1:0"); err != nil {
		return err
	}
	defer p.stop()
	r.sendURL = "nats://" + p.addr
	if err := r.startBridge(ctx, "bridge"); err != nil {
		return err
	}
	d := time.Duration(e.size(16, 12)) * time.Second
	cut := time.Duration(e.size(6, 4)) * time.Second
	start := time.Now()
	done := r.burst(ctx, "s15", d)
	closed := 0
	for i, at := range []time.Duration{d / 4, 3 * d / 4} {
		if err := sleep(ctx, at-time.Since(start)); err != nil {
			return err
		}
		n := p.cutOff(2 * time.Second)
		closed += n
		e.logf("remote host partitioned: proxy stopped, %d connections closed", n)
		if i == 1 {
			if err := <-done; err != nil {
				return err
			}
		}
		if err := sleep(ctx, cut); err != nil {
			return err
		}
		if err := p.start(p.addr); err != nil {
			return fmt.Errorf("heal the partition: %w", err)
		}
		e.heal()
		e.logf("partition healed")
	}
	e.note("remote senders cut off from NATS twice (their TCP proxy stopped, %d open connections closed in all): for %v mid-burst, then from 3/4 of the burst until %v after it; %d connections through the proxy in all",
		closed, cut, cut, p.accepted())
	if err := r.flush(ctx); err != nil {
		return err
	}
	r.noteSends("partition")
	left := 0
	for _, s := range r.senders {
		left += len(s.snapshot)
	}
	if left == 0 {
		e.problem("the outboxes were empty before the final flush: the partition at the end queued nothing")
	}
	return nil
}
