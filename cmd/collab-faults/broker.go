package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/spf13/pflag"
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
	if err := fs.Parse(args); err != nil || *port == 0 || *dir == "" {
		fmt.Fprintln(stderr, "usage: collab-faults __nats --port P --dir D")
		return 2
	}
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: *port, JetStream: true, StoreDir: *dir, NoLog: true, NoSigs: true,
	})
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
func (e *env) startNATS(ctx context.Context, port int, dir string) (*natsProc, error) {
	cmd := exec.Command(e.h.self, natsArg, "--port", strconv.Itoa(port), "--dir", dir)
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
// (dual-write, wake-ups) while the broker is SIGKILLed, left down while
// messages and replies pile up (more than any reconnect buffer would hold),
// restarted on the same port and store, then SIGSTOPped (connections stay
// open but nothing answers) and SIGCONTed. Files must deliver everything,
// nothing may be answered twice, and no stale publish may be replayed.
func brokerFaults(ctx context.Context, e *env) error {
	n := e.size(120, 48)
	port, err := freePort()
	if err != nil {
		return err
	}
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	store := filepath.Join(e.dir, "nats")
	broker, err := e.startNATS(ctx, port, store)
	if err != nil {
		return err
	}
	defer func() { broker.kill() }()
	natsEnv := []string{"NATS_URL=" + url}
	init := exec.CommandContext(ctx, e.h.collab, "nats", "init", "--root", e.backing)
	init.Env = append(childEnv(), natsEnv...)
	if out, err := init.CombinedOutput(); err != nil {
		return fmt.Errorf("collab nats init: %v: %s", err, out)
	}
	// Polling every 2 s without inotify: NATS is what makes it fast, the
	// poll is what makes it right.
	o := watchOpts{root: e.backing, poll: 2 * time.Second, noNotify: true, env: natsEnv}
	w, err := e.startWatcher(ctx, o, true)
	if err != nil {
		return err
	}
	phase := func(i int) string {
		switch {
		case i == n/5:
			broker.kill()
			return "broker SIGKILLed"
		case i == 2*n/5:
			var err error
			if broker, err = e.startNATS(ctx, port, store); err != nil {
				return "restart failed: " + err.Error()
			}
			return "broker restarted"
		case i == 3*n/5:
			broker.cmd.Process.Signal(syscall.SIGSTOP)
			return "broker SIGSTOPped"
		case i == 3*n/5+n/12:
			// Every send meanwhile waits out a connect timeout; a few
			// are enough.
			broker.cmd.Process.Signal(syscall.SIGCONT)
			return "broker SIGCONTed"
		}
		return ""
	}
	var slowest time.Duration
	for i := range n {
		if p := phase(i); p != "" {
			e.logf("%s (message %d of %d)", p, i+1, n)
			if strings.HasPrefix(p, "restart failed") {
				return fmt.Errorf("%s", p)
			}
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
	e.note("slowest send %v (a stopped broker holds a connect or publish up to its timeout)", slowest.Round(time.Millisecond))
	if err := e.await(ctx, 60*time.Second, 3*time.Second); err != nil {
		return err
	}
	if n := countLines(w.log, "nats"); n == 0 {
		e.problem("the watcher's log never mentions nats: the broker faults reached nothing")
	}
	e.note("%d watcher log lines about nats", countLines(w.log, "nats"))
	return nil
}

// sendEnv is send with extra environment for the child.
func (e *env) sendEnv(ctx context.Context, extra []string, text string) (ack, error) {
	return e.sendWith(ctx, e.backing, sender, text, extra)
}
