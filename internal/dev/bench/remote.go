package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
)

// The remote part: hosts without the mount (docs/remote.md, "Hosts without the
// mount"). Each run has its own tree (the mount), an embedded nats-server
// with JetStream and the CHAT stream on loopback, `collab bridge`
// processes serving the tree, and remote hosts that are in-process
// remote.Clients (what send, read and read --follow --remote use) with a
// state folder each and no access to the tree.
//
//   - Send → reply: a remote agent posts a message (remote.Client.Post:
//     outbox, signed, the bridge's post op) to an agent served on the mount
//     by collab watch with the demo's stand-in CLI; the time from Post being
//     called to the stand-in's reply arriving at the remote host through
//     the stream (remote.Client.Follow, the bridge publishing it).
//   - Bridge throughput: remoteSenders clients post at once, each its
//     messages one after another, through one bridge process and through
//     two; signed posts acknowledged per second.
//   - Catch-up: 10,000 messages in a channel on the mount, each published to
//     the stream as the mount's writers do; the time for Follow (read
//     --remote --follow) from the start to have all of them.
//   - A remote watcher back after a day away: the mirror of `collab watch
//     --remote` (remote.Mirror) ran once, stopped, and 10,000 messages
//     landed on the mount meanwhile (the bridge publishing them); the time
//     from its restart until it has caught up (Mirror.CaughtUp: every
//     message a file in its tree). Once with the stream holding them, once
//     with the stream purged meanwhile (its retention passed), so that the
//     mirror pages them from the files through the bridge's read op.

// remoteSenders is how many remote clients post at once in the throughput
// runs.
const remoteSenders = 8

// remoteRig is one run's mount, server, bridges and stand-in watcher.
type remoteRig struct {
	dir      string
	root     tree.Root
	url      string
	signers  map[string]*signing.Signer
	procs    []*idleWatcher // bridges and the watcher, stopped by close
	stopNATS func()
}

func (r *remoteRig) close() {
	for _, p := range slices.Backward(r.procs) {
		p.stop()
	}
	if r.stopNATS != nil {
		r.stopNATS()
	}
}

// newRemoteRig makes a tree in which alice (the remote sender) and the
// throughput senders are trusted, starts nats-server with the
// stream, and starts bridges bridge processes.
func (b *bench) newRemoteRig(ctx context.Context, name string, bridges int) (*remoteRig, error) {
	r := &remoteRig{dir: filepath.Join(b.dir, name)}
	r.root = tree.Root(filepath.Join(r.dir, "tree"))
	if err := os.MkdirAll(r.root.Channel(backlogChannel), 0o755); err != nil {
		return r, err
	}
	agents := []string{senderAgent} // codex, unkeyed, replies unsigned
	for i := range remoteSenders {
		agents = append(agents, "sender-"+strconv.Itoa(i))
	}
	var err error
	if r.signers, err = trustKeys(r.root, agents); err != nil {
		return r, err
	}
	srv, err := startNATS(filepath.Join(r.dir, "nats"))
	if err != nil {
		return r, err
	}
	r.stopNATS = srv.Shutdown
	r.url = srv.ClientURL()
	bus, err := natsbus.Connect(ctx, natsbus.Options{URL: r.url, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return r, err
	}
	defer bus.Close()
	if _, err := bus.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		return r, err
	}
	bin, err := b.collabBinary(ctx)
	if err != nil {
		return r, err
	}
	for i := range bridges {
		cmd := exec.Command(bin, "bridge", "--root", string(r.root), "--nats", r.url, "--log-level", "warn")
		cmd.Env = childEnv()
		p, err := startProc("bridge-"+strconv.Itoa(i), cmd)
		if err != nil {
			return r, err
		}
		r.procs = append(r.procs, p)
	}
	return r, nil
}

// client dials a remote client for agent with its own state folder and
// waits until a bridge answers it.
func (r *remoteRig) client(ctx context.Context, agent string) (*remote.Client, error) {
	c, err := remote.Dial(ctx, natsbus.Options{URL: r.url, Logger: slog.New(slog.DiscardHandler)},
		remote.Config{Agent: agent, Signer: r.signers[agent], StateDir: filepath.Join(r.dir, "state-"+agent), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	if err := waitFor(ctx, "a bridge to answer", func() bool {
		_, err := c.Read(ctx, backlogChannel, "", 1)
		return err == nil
	}); err != nil {
		c.Close()
		for _, p := range r.procs {
			if p.exited() {
				return nil, fmt.Errorf("%s exited: %s", p.agent, tail(p.stderr.String(), 500))
			}
		}
		return nil, err
	}
	return c, nil
}

func (b *bench) remote(ctx context.Context) []Figure {
	n := b.size.remote
	p50 := spec{name: "remote send → reply seen remotely: p50", unit: "ms",
		note: fmt.Sprintf("remote.Client.Post (outbox, signed, one collab bridge) to an agent served on the mount by collab watch with the stand-in, until its reply arrives through the stream (Client.Follow); loopback nats-server; %d messages per run", n)}
	p99 := spec{name: "remote send → reply seen remotely: p99", unit: "ms",
		note: fmt.Sprintf("nearest rank over %d messages per run", n)}
	one := spec{name: fmt.Sprintf("remote posts through one bridge (%d senders)", remoteSenders), unit: "msgs/s",
		note: fmt.Sprintf("%s signed posts, %d remote clients at once, each acked by the bridge (post op: verify, atomic publish on the mount)", thousands(b.size.remoteThru), remoteSenders)}
	two := spec{name: fmt.Sprintf("remote posts through two bridges (%d senders)", remoteSenders), unit: "msgs/s",
		note: "as above, two collab bridge processes in the queue group"}
	catch := spec{name: fmt.Sprintf("remote catch-up of %s messages (read --remote --follow)", thousands(b.size.remoteCatchup)), unit: "s",
		note: "Client.Follow from the stream's start until every message of the channel has arrived"}
	fromStream := spec{name: fmt.Sprintf("remote watcher's catch-up of %s messages from the stream (watch --remote)", thousands(b.size.remoteCatchup)), unit: "s",
		note: "remote.Mirror restarted after the messages landed on the mount, until CaughtUp: every one a file in the mirror tree"}
	fromFiles := spec{name: fmt.Sprintf("remote watcher's catch-up of %s messages the stream no longer holds (watch --remote)", thousands(b.size.remoteCatchup)), unit: "s",
		note: "as above with the stream purged meanwhile: paged from the files through the bridge's read op"}

	lv, lerr := b.repeat(ctx, "remote send→reply p50/p99 ms", 2, func(run int) ([]float64, error) {
		return b.remoteReply(ctx, run)
	})
	tv, terr := b.repeat(ctx, "remote posts/s one/two bridges", 2, func(run int) ([]float64, error) {
		v1, err := b.remoteThroughput(ctx, run, 1)
		if err != nil {
			return nil, err
		}
		v2, err := b.remoteThroughput(ctx, run, 2)
		if err != nil {
			return nil, err
		}
		return []float64{v1, v2}, nil
	})
	cv, cerr := b.repeat(ctx, "remote catch-up s", 1, func(run int) ([]float64, error) {
		return b.remoteCatchup(ctx, run)
	})
	mv, merr := b.repeat(ctx, "remote watcher catch-up s stream/files", 2, func(run int) ([]float64, error) {
		vs, err := b.remoteMirror(ctx, run, false)
		if err != nil {
			return nil, err
		}
		vf, err := b.remoteMirror(ctx, run, true)
		if err != nil {
			return nil, err
		}
		return []float64{vs, vf}, nil
	})
	return []Figure{p50.figure(lv[0], lerr), p99.figure(lv[1], lerr), one.figure(tv[0], terr), two.figure(tv[1], terr), catch.figure(cv[0], cerr),
		fromStream.figure(mv[0], merr), fromFiles.figure(mv[1], merr)}
}

// remoteReply measures one run of send → reply seen remotely.
func (b *bench) remoteReply(ctx context.Context, run int) ([]float64, error) {
	r, err := b.newRemoteRig(ctx, "remote-reply-"+strconv.Itoa(run), 1)
	defer r.close()
	if err != nil {
		return nil, err
	}
	bin, standin, err := b.binaries(ctx)
	if err != nil {
		return nil, err
	}
	w, err := startWatch(r.root, bin, benchAgent, standin)
	if err != nil {
		return nil, err
	}
	r.procs = append(r.procs, w)
	if err := waitIdle(ctx, r.root, []*idleWatcher{w}); err != nil {
		return nil, err
	}
	c, err := r.client(ctx, senderAgent)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	replies := make(chan channel.Message, 64)
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		c.Follow(fctx, backlogChannel, time.Now(), nil, func(m channel.Message) error {
			if m.From == benchAgent {
				replies <- m
			}
			return nil
		})
	})
	var lat []time.Duration
	for i := range b.size.remote + 1 { // 0 is the warm-up
		if err := sleep(ctx, shortGap()); err != nil {
			return nil, err
		}
		m := channel.Message{SessionID: backlogChannel, To: benchAgent,
			Content: channel.Content{Text: fmt.Sprintf("@%s how is build %d going?", benchAgent, i)}}
		t0 := time.Now()
		if _, err := c.Post(ctx, &m); err != nil {
			return nil, err
		}
		timeout := time.After(waitLong)
	wait:
		for {
			select {
			case rep := <-replies:
				if rep.Metadata.InReplyTo == m.ID {
					if i > 0 {
						lat = append(lat, time.Since(t0))
					}
					break wait
				}
			case <-timeout:
				return nil, fmt.Errorf("no reply to %s seen remotely within %v: %s", m.ID, waitLong, tail(w.stderr.String(), 500))
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	slices.Sort(lat)
	return []float64{ms(percentile(lat, 50)), ms(percentile(lat, 99))}, nil
}

// remoteThroughput posts b.size.remoteThru messages from remoteSenders
// clients at once through bridges bridge processes and returns the
// messages per second; every one must be on the mount.
func (b *bench) remoteThroughput(ctx context.Context, run, bridges int) (float64, error) {
	r, err := b.newRemoteRig(ctx, fmt.Sprintf("remote-thru-%d-%d", bridges, run), bridges)
	defer r.close()
	if err != nil {
		return 0, err
	}
	clients := make([]*remote.Client, remoteSenders)
	for i := range clients {
		if clients[i], err = r.client(ctx, "sender-"+strconv.Itoa(i)); err != nil {
			return 0, err
		}
		defer clients[i].Close()
	}
	const ch = "thru"
	per := b.size.remoteThru / remoteSenders
	errs := make([]error, remoteSenders)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, c := range clients {
		wg.Go(func() {
			for j := range per {
				m := channel.Message{SessionID: ch, To: channel.Broadcast, Content: channel.Content{Text: fmt.Sprintf("post %d of sender %d", j, i)}}
				if _, err := c.Post(ctx, &m); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if err := countFiles(r.root.Channel(ch), per*remoteSenders); err != nil {
		return 0, err
	}
	return float64(per*remoteSenders) / took.Seconds(), nil
}

// remoteCatchup writes b.size.remoteCatchup messages on the mount, each
// published to the stream, and times Client.Follow from the start until
// it has all of them.
func (b *bench) remoteCatchup(ctx context.Context, run int) ([]float64, error) {
	r, err := b.newRemoteRig(ctx, "remote-catchup-"+strconv.Itoa(run), 1)
	defer r.close()
	if err != nil {
		return nil, err
	}
	const ch = "catchup"
	bus, err := natsbus.Connect(ctx, natsbus.Options{URL: r.url, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	defer bus.Close()
	start := time.Now()
	w := &channel.Writer{Root: r.root, Signer: r.signers[senderAgent]}
	n := b.size.remoteCatchup
	for i := range n {
		m := channel.Message{SessionID: ch, From: senderAgent, To: channel.Broadcast, Content: channel.Content{Text: "backlog message " + strconv.Itoa(i)}}
		if err := w.Post(&m); err != nil {
			return nil, err
		}
		if err := bus.PublishMessage(ctx, &m); err != nil {
			return nil, err
		}
	}
	c, err := r.client(ctx, senderAgent)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	fctx, cancel := context.WithTimeout(ctx, 5*waitLong)
	defer cancel()
	got := make(map[string]bool, n)
	t0 := time.Now()
	err = c.Follow(fctx, ch, start, nil, func(m channel.Message) error {
		got[m.ID] = true
		if len(got) == n {
			cancel()
		}
		return nil
	})
	took := time.Since(t0)
	if err != nil {
		return nil, err
	}
	if len(got) != n {
		return nil, fmt.Errorf("catch-up: %d of %d messages within %v", len(got), n, 5*waitLong)
	}
	return []float64{took.Seconds()}, nil
}

// remoteMirror times a remote watcher's mirror catching up on
// b.size.remoteCatchup messages that landed on the mount while it was
// stopped (the bridge publishing them); with purge, the stream is purged
// before the restart, so they come from the files through the bridge.
func (b *bench) remoteMirror(ctx context.Context, run int, purge bool) (float64, error) {
	r, err := b.newRemoteRig(ctx, fmt.Sprintf("remote-mirror-%t-%d", purge, run), 1)
	defer r.close()
	if err != nil {
		return 0, err
	}
	const agent, ch = "sender-0", "away"
	c, err := r.client(ctx, agent)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	dir := filepath.Join(r.dir, "state-"+agent, "tree")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(r.root.Channel(ch), 0o755); err != nil {
		return 0, err
	}
	bus, err := natsbus.Connect(ctx, natsbus.Options{URL: r.url, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, err
	}
	defer bus.Close()
	js, err := jetstream.New(bus.Conn())
	if err != nil {
		return 0, err
	}
	stream, err := js.Stream(ctx, natsbus.StreamName)
	if err != nil {
		return 0, err
	}
	published := func(want uint64) error {
		return waitFor(ctx, fmt.Sprintf("%d messages in the stream", want), func() bool {
			info, err := stream.Info(ctx)
			return err == nil && info.State.Msgs >= want
		})
	}
	// run starts a mirror and returns once it has caught up.
	runMirror := func() (stop func() error, err error) {
		m, err := remote.NewMirror(remote.MirrorConfig{Client: c, Channels: []string{ch}, Dir: dir, Poll: 100 * time.Millisecond})
		if err != nil {
			return nil, err
		}
		mctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- m.Run(mctx) }()
		stop = func() error { cancel(); return <-done }
		select {
		case <-m.CaughtUp():
			return stop, nil
		case err := <-done:
			cancel()
			return nil, fmt.Errorf("the mirror stopped: %v", err)
		case <-time.After(5 * waitLong):
			stop()
			return nil, fmt.Errorf("the mirror did not catch up within %v", 5*waitLong)
		}
	}
	w := &channel.Writer{Root: r.root, Signer: r.signers[senderAgent]}
	post := func(i int) error {
		m := channel.Message{SessionID: ch, From: senderAgent, To: channel.Broadcast, Content: channel.Content{Text: "message " + strconv.Itoa(i) + " while the remote host was away"}}
		return w.Post(&m)
	}
	// The first start: the mirror has the channel's first message and a
	// position in the stream.
	if err := post(0); err != nil {
		return 0, err
	}
	if err := published(1); err != nil {
		return 0, err
	}
	stop, err := runMirror()
	if err != nil {
		return 0, err
	}
	if err := stop(); err != nil {
		return 0, err
	}
	if err := countFiles(filepath.Join(dir, "channels", ch), 1); err != nil {
		return 0, err
	}
	n := b.size.remoteCatchup
	for i := range n {
		if err := post(i + 1); err != nil {
			return 0, err
		}
	}
	if err := published(uint64(n + 1)); err != nil {
		return 0, err
	}
	if purge {
		if err := stream.Purge(ctx); err != nil {
			return 0, err
		}
	}
	t0 := time.Now()
	stop, err = runMirror()
	took := time.Since(t0)
	if err != nil {
		return 0, err
	}
	if err := stop(); err != nil {
		return 0, err
	}
	if err := countFiles(filepath.Join(dir, "channels", ch), n+1); err != nil {
		return 0, err
	}
	return took.Seconds(), nil
}
