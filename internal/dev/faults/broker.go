package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

const natsArg = "__nats"

// natsChild runs a NATS server with JetStream on 127.0.0.1:--port, storing
// in --dir, and prints "ready" once it accepts clients. It runs as its own
// process so the scenario can SIGKILL, SIGSTOP and restart it.
func natsChild(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet(natsArg, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 0, "port to listen on")
	dir := fs.String("dir", "", "JetStream store folder")
	name := fs.String("name", "", "server name (a cluster node's)")
	cport := fs.Int("cluster-port", 0, "cluster port: a node of the cluster "+clusterName)
	routes := fs.String("routes", "", "the other nodes' cluster URLs, comma-separated")
	if err := fs.Parse(args); err != nil || *port == 0 || *dir == "" {
		fmt.Fprintln(stderr, "usage: collab-faults __nats --port P --dir D [--name N --cluster-port C --routes URLS]")
		return 2
	}
	opts := &server.Options{
		Host: "127.0.0.1", Port: *port, JetStream: true, StoreDir: *dir, NoLog: true, NoSigs: true, ServerName: *name,
	}
	if *cport != 0 {
		opts.Cluster = server.ClusterOpts{Name: clusterName, Host: "127.0.0.1", Port: *cport}
		opts.Routes = server.RoutesFromStr(*routes)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintln(stderr, "nats:", err)
		return 1
	}
	s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		fmt.Fprintln(stderr, "nats: not ready")
		return 1
	}
	fmt.Fprintln(stdout, "ready")
	select {} // until killed
}

// natsProc is the broker child process.
type natsProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startNATS starts the broker on port with its store in dir and waits
// until it is ready.
func (e *env) startNATS(ctx context.Context, port int, dir string, more ...string) (*natsProc, error) {
	cmd := exec.Command(e.h.self, append([]string{natsArg, "--port", strconv.Itoa(port), "--dir", dir}, more...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &natsProc{cmd: cmd, done: make(chan struct{})}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ready <- sc.Scan() && sc.Text() == "ready"
		io.Copy(io.Discard, out)
	}()
	go func() { cmd.Wait(); close(p.done) }()
	select {
	case ok := <-ready:
		if !ok {
			p.kill()
			return nil, fmt.Errorf("nats server did not start: %s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		p.kill()
		return nil, fmt.Errorf("nats server not ready after 30 s: %s", stderr.String())
	case <-ctx.Done():
		p.kill()
		return nil, ctx.Err()
	}
	return p, nil
}

func (p *natsProc) kill() {
	p.cmd.Process.Signal(syscall.SIGCONT)
	p.cmd.Process.Kill()
	<-p.done
}

// freePort returns a TCP port on 127.0.0.1 nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// brokerFaults (scenario 10): the watcher and the senders use NATS
// JetStream (dual-write, wake-ups; `collab nats init` makes the stream)
// while the broker is SIGKILLed, left down, restarted on the same port and
// store, then SIGSTOPped (connections stay open but nothing answers) and
// SIGCONTed. Files must deliver everything and nothing may be answered
// twice.
//
// natsbus runs without a reconnect buffer (nats.ReconnectBufSize(-1)): a
// publish while disconnected fails at once instead of being kept and
// replayed, stale, after the reconnect. While the broker is down the
// harness, connected like a watcher through natsbus, posts a burst of
// messages larger than nats.go's default reconnect buffer (8 MB) and
// publishes each; a buffer would have kept the first 8 MB and replayed
// them. At the end the stream is read (natsbus.StreamIDs) and compared with
// the files (natsbus.Parity): it must hold no message twice, nothing that
// is not a file, and nothing published while the broker was down.
func brokerFaults(ctx context.Context, e *env) error {
	n := e.size(120, 48)
	port, err := freePort()
	if err != nil {
		return err
	}
	r := &brokerRun{e: e, port: port, store: filepath.Join(e.dir, "nats")}
	if r.broker, err = e.startNATS(ctx, port, r.store); err != nil {
		return err
	}
	defer func() { r.broker.kill() }()
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	natsEnv := []string{"NATS_URL=" + url}
	bus, closeBus, err := e.harnessBus(ctx, url, natsEnv)
	if err != nil {
		return err
	}
	defer closeBus()
	// Polling every 2 s without inotify: NATS is what makes it fast, the
	// poll is what makes it right.
	o := watchOpts{root: e.backing, poll: 2 * time.Second, noNotify: true, env: natsEnv}
	w, err := e.startWatcher(ctx, o, true)
	if err != nil {
		return err
	}
	var slowest time.Duration
	for i := range n {
		if p, err := r.phase(ctx, bus, i, n); err != nil {
			return err
		} else if p != "" {
			e.logf("%s (message %d of %d)", p, i+1, n)
		}
		t0 := time.Now()
		if _, err := e.sendEnv(ctx, natsEnv, fmt.Sprintf("s10 message %d of %d", i+1, n)); err != nil {
			return err
		}
		slowest = max(slowest, time.Since(t0))
		if err := sleep(ctx, between(e.rng, 20*time.Millisecond, 120*time.Millisecond)); err != nil {
			return err
		}
	}
	b := r.b
	e.note("slowest send %v (a stopped broker holds a connect or publish up to its timeout)", slowest.Round(time.Millisecond))
	e.note("burst while the broker was down: %d messages, %.1f MB (nats.go's default reconnect buffer is 8 MB): %d publishes failed at once, %d were accepted",
		b.n, float64(b.bytes)/(1<<20), b.failed, b.n-b.failed)
	if b.failed != b.n {
		e.problem("%d publishes were accepted while the broker was down: a reconnect buffer kept them", b.n-b.failed)
	}
	if err := e.await(ctx, 60*time.Second, 3*time.Second); err != nil {
		return err
	}
	if n := countLines(w.log, "nats"); n == 0 {
		e.problem("the watcher's log never mentions nats: the broker faults reached nothing")
	}
	e.note("%d watcher log lines about nats", countLines(w.log, "nats"))
	return e.checkStream(ctx, bus, b, r.down, r.up)
}

// harnessBus makes the stream (collab nats init) and connects the
// harness to the broker through natsbus, as a watcher is, logging to
// harness-nats.log; it refuses a broker without the stream.
func (e *env) harnessBus(ctx context.Context, url string, natsEnv []string) (*natsbus.Bus, func(), error) {
	init := exec.CommandContext(ctx, e.h.collab, "nats", "init", "--root", e.backing)
	init.Env = append(childEnv(), natsEnv...)
	if out, err := init.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("collab nats init: %v: %s", err, out)
	}
	busLog, err := os.Create(filepath.Join(e.dir, "harness-nats.log"))
	if err != nil {
		return nil, nil, err
	}
	bus, err := natsbus.Connect(ctx, natsbus.Options{URL: url, Name: "collab-faults", ReconnectWait: 250 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(busLog, nil))})
	if err != nil {
		busLog.Close()
		return nil, nil, err
	}
	closeAll := func() { bus.Close(); busLog.Close() }
	if !bus.JetStream() {
		closeAll()
		return nil, nil, fmt.Errorf("the broker has no stream after collab nats init: the scenario would test core NATS only")
	}
	return bus, closeAll, nil
}

// brokerRun is scenario 10's broker and what its faults left to check.
type brokerRun struct {
	e      *env
	port   int
	store  string
	broker *natsProc

	down, up time.Time // when the broker was killed and restarted
	b        burst     // published while it was down
}

// phase makes the fault due before message i of n, if any, and says what
// it did.
func (r *brokerRun) phase(ctx context.Context, bus *natsbus.Bus, i, n int) (string, error) {
	switch {
	case i == n/5:
		r.broker.kill()
		r.down = time.Now()
		var err error
		if r.b, err = r.e.publishBurst(ctx, bus); err != nil {
			return "", fmt.Errorf("burst failed: %w", err)
		}
		return fmt.Sprintf("broker SIGKILLed; a burst of %d messages, %.1f MB, published while it is down: %d publishes failed at once",
			r.b.n, float64(r.b.bytes)/(1<<20), r.b.failed), nil
	case i == 2*n/5:
		var err error
		if r.broker, err = r.e.startNATS(ctx, r.port, r.store); err != nil {
			return "", fmt.Errorf("restart failed: %w", err)
		}
		r.up = time.Now()
		return "broker restarted", nil
	case i == 3*n/5:
		r.broker.cmd.Process.Signal(syscall.SIGSTOP)
		return "broker SIGSTOPped", nil
	case i == 3*n/5+n/12:
		// Every send meanwhile waits out a connect timeout; a few are
		// enough.
		r.broker.cmd.Process.Signal(syscall.SIGCONT)
		r.e.heal()
		return "broker SIGCONTed", nil
	}
	return "", nil
}

// burst is what publishBurst posted.
type burst struct {
	ids       []string
	n, failed int
	bytes     int64
}

// burstSize is how much publishBurst publishes: more than nats.go's
// default reconnect buffer (nats.DefaultReconnectBufSize, 8 MB).
const burstSize = nats.DefaultReconnectBufSize + 1<<20

// publishBurst waits until bus has noticed that the broker is gone, then
// posts messages of 512 KiB for the agent (files, acked: they must be
// answered) and publishes each through bus, until more than burstSize
// bytes were published.
func (e *env) publishBurst(ctx context.Context, bus *natsbus.Bus) (burst, error) {
	var b burst
	for deadline := time.Now().Add(10 * time.Second); bus.Stats().Disconnects == 0; {
		if time.Now().After(deadline) {
			return b, fmt.Errorf("the harness's connection did not notice the broker's death in 10 s")
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return b, err
		}
	}
	wr := &channel.Writer{Root: tree.Root(e.backing)}
	for i := 0; b.bytes <= burstSize; i++ {
		text := fmt.Sprintf("s10 burst %d ", i+1) + strings.Repeat(string(rune('a'+i%26)), 512<<10)
		m := &channel.Message{From: sender, Content: channel.Content{Text: text}}
		if _, err := e.post(wr, m); err != nil {
			return b, err
		}
		data, err := m.Encode()
		if err != nil {
			return b, err
		}
		b.ids = append(b.ids, m.ID)
		b.n++
		b.bytes += int64(len(data))
		if err := bus.PublishMessage(ctx, m); err != nil {
			b.failed++
		}
	}
	return b, nil
}

// checkStream reads the channel's messages in the stream and compares them
// with the files: no id twice, none that is not a file, none of the burst
// and none named in the seconds the broker was down (a publish then can
// only be in the stream if something kept it and replayed it).
func (e *env) checkStream(ctx context.Context, bus *natsbus.Bus, b burst, down, up time.Time) error {
	var (
		set natsbus.StreamSet
		err error
	)
	for try := 0; ; try++ {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		set, err = bus.StreamIDs(rctx, chanName, time.Time{})
		cancel()
		if err == nil {
			break
		}
		if try == 4 {
			return fmt.Errorf("read the stream: %w", err)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
	files, err := natsbus.FileIDs(tree.Root(e.backing), chanName, set.From)
	if err != nil {
		return err
	}
	missingInStream, missingInFiles := natsbus.Parity(files, set.IDs)
	var fromBurst, whileDown []string
	for _, id := range b.ids {
		if _, ok := set.IDs[id]; ok {
			fromBurst = append(fromBurst, id)
		}
	}
	for id := range set.IDs {
		// Names have whole seconds: one second of margin after the
		// kill (a publish in flight then may have been stored), none
		// before the restart.
		if n, err := channel.ParseID(id); err == nil && n.Time.Unix() > down.Unix()+1 && n.Time.Unix() < up.Unix() {
			whileDown = append(whileDown, id)
		}
	}
	e.note("stream: %d messages, %d stored twice; files: %d; parity: %d files not in the stream (published while the broker was down or stopped), %d stream messages with no file; in the stream: %d of the burst, %d named while the broker was down",
		len(set.IDs), len(set.Duplicates), len(files), len(missingInStream), len(missingInFiles), len(fromBurst), len(whileDown))
	if len(set.Duplicates) > 0 {
		e.problem("the stream holds %d messages twice: %s", len(set.Duplicates), clip(strings.Join(set.Duplicates, " "), 300))
	}
	if len(missingInFiles) > 0 {
		e.problem("the stream holds %d messages with no file: %s", len(missingInFiles), clip(strings.Join(missingInFiles, " "), 300))
	}
	if stale := slices.Compact(slices.Sorted(slices.Values(append(fromBurst, whileDown...)))); len(stale) > 0 {
		e.problem("%d stale publishes were replayed after the reconnect: %s", len(stale), clip(strings.Join(stale, " "), 300))
	}
	if st := bus.Stats(); st.Reconnects == 0 {
		e.problem("the harness's connection never reconnected")
	}
	return nil
}

// sendEnv is send with extra environment for the child.
func (e *env) sendEnv(ctx context.Context, extra []string, text string) (ack, error) {
	return e.sendWith(ctx, e.backing, sender, text, extra)
}
