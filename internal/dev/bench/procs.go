package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// collabBinary returns the collab binary to run: the one given, or one
// built once with go build into the temp folder.
func (b *bench) collabBinary(ctx context.Context) (string, error) {
	if b.collab != "" {
		return b.collab, nil
	}
	bin := filepath.Join(b.dir, "bin", "collab")
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/collabdev/collab/cmd/collab")
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build collab/cmd/collab (run from the collab module, or use -collab): %v: %s", err, tail(string(out), 1000))
	}
	fmt.Fprintf(b.progress, "   built %s in %v\n", bin, time.Since(start).Round(time.Millisecond))
	b.collab = bin
	return bin, nil
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

// runError is a child that failed, with the end of its stderr.
type runError struct {
	argv   []string
	err    error
	stderr string
}

func (e *runError) Error() string {
	return fmt.Sprintf("%s: %v: %s", strings.Join(e.argv, " "), e.err, tail(strings.TrimSpace(e.stderr), 500))
}

func (e *runError) Unwrap() error { return e.err }

// runCollab runs the collab binary once and returns its standard output
// (at most 4 MiB). ctx sends SIGTERM; 5 s later it is killed.
func runCollab(ctx context.Context, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = childEnv()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	stdout, stderr := &capped{max: 4 << 20}, &capped{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return nil, &runError{argv: cmd.Args, err: err, stderr: stderr.String()}
	}
	return []byte(stdout.String()), nil
}

func (b *bench) send(ctx context.Context) []Figure {
	np, nq := b.size.sendProc, b.size.sendPost
	proc := spec{name: fmt.Sprintf("send: one collab send process per message (%s)", thousands(np)), unit: "msgs/s",
		note: "collab send --to all run one after another, exec and Go start-up included; atomic fsync'd publish on the temp folder's filesystem"}
	post := spec{name: fmt.Sprintf("send: in-process Writer.Post (%s)", thousands(nq)), unit: "msgs/s",
		note: "channel.Writer.Post one after another in this process; atomic fsync'd publish"}
	root := tree.Root(filepath.Join(b.dir, "send"))
	var pv [][]float64
	bin, perr := b.collabBinary(ctx)
	if perr == nil {
		perr = os.MkdirAll(root.Channels(), 0o755) // a tree: collab send refuses anything else
	}
	if perr == nil {
		pv, perr = b.repeat(ctx, "send process msgs/s", 1, func(run int) ([]float64, error) {
			ch := "proc-" + strconv.Itoa(run+1)
			t0 := time.Now()
			for i := range np {
				if _, err := runCollab(ctx, bin, "send", "--root", string(root), "--agent", senderAgent, "--channel", ch, "--to", channel.Broadcast, "--text", "message "+strconv.Itoa(i)); err != nil {
					return nil, err
				}
			}
			took := time.Since(t0)
			if err := countFiles(root.Channel(ch), np); err != nil {
				return nil, err
			}
			return []float64{float64(np) / took.Seconds()}, nil
		})
	} else {
		pv = make([][]float64, 1)
	}
	qv, qerr := b.repeat(ctx, "send in-process msgs/s", 1, func(run int) ([]float64, error) {
		ch := "post-" + strconv.Itoa(run+1)
		w := &channel.Writer{Root: root}
		t0 := time.Now()
		for i := range nq {
			m := channel.Message{SessionID: ch, From: senderAgent, To: channel.Broadcast, Content: channel.Content{Text: "message " + strconv.Itoa(i)}}
			if err := w.Post(&m); err != nil {
				return nil, err
			}
		}
		took := time.Since(t0)
		if err := countFiles(root.Channel(ch), nq); err != nil {
			return nil, err
		}
		return []float64{float64(nq) / took.Seconds()}, nil
	})
	return []Figure{proc.figure(pv[0], perr), post.figure(qv[0], qerr)}
}

// countFiles checks that dir holds want message files.
func countFiles(dir string, want int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	n := 0
	for _, e := range entries {
		if _, err := channel.ParseName(e.Name()); err == nil {
			n++
		}
	}
	if n != want {
		return fmt.Errorf("%s: %d messages, want %d", dir, n, want)
	}
	return nil
}

func (b *bench) who(ctx context.Context) []Figure {
	n, calls := b.size.agents, b.size.whoCalls
	s := spec{name: fmt.Sprintf("who over %s agents, signed heartbeats (collab who process)", thousands(n)), unit: "ms", max: 100,
		note: fmt.Sprintf("wall time of collab who as a process, exec included; median of %d calls per run after one warm-up; a tenth of the agents on this host, their PIDs checked; every heartbeat signed and verified against ROOT/keys (one key per agent)", calls)}
	root, err := b.presenceFixture(n)
	if err != nil {
		return []Figure{s.figure(nil, err)}
	}
	bin, err := b.collabBinary(ctx)
	if err != nil {
		return []Figure{s.figure(nil, err)}
	}
	vals, err := b.repeat(ctx, "who ms", 1, func(int) ([]float64, error) {
		var ds []float64
		for i := range calls + 1 { // 0 is the warm-up
			t0 := time.Now()
			out, err := runCollab(ctx, bin, "who", "--root", string(root))
			took := time.Since(t0)
			if err != nil {
				return nil, err
			}
			if lines := bytes.Count(out, []byte("\n")); lines != n+1 {
				return nil, fmt.Errorf("collab who printed %d lines, want %d", lines, n+1)
			}
			if i > 0 {
				ds = append(ds, ms(took))
			}
		}
		return []float64{median(ds)}, nil
	})
	return []Figure{s.figure(vals[0], err)}
}

// presenceFixture writes n agents' heartbeats: most AWAKE on other hosts,
// a tenth on this host with this process's PID (alive, so who checks it),
// some working, some offline; each agent has a key trusted in ROOT/keys
// and its heartbeat is signed with it.
func (b *bench) presenceFixture(n int) (tree.Root, error) {
	root := tree.Root(filepath.Join(b.dir, "who"))
	if err := os.MkdirAll(root.Presence(), 0o755); err != nil {
		return "", err
	}
	if err := os.MkdirAll(root.Channels(), 0o755); err != nil { // a tree: collab who refuses anything else
		return "", err
	}
	var agents []string
	for i := range n {
		agents = append(agents, fmt.Sprintf("agent-%04d", i))
	}
	signers, err := trustKeys(root, agents)
	if err != nil {
		return "", err
	}
	host, _ := os.Hostname()
	now := time.Now()
	for i := range n {
		s := presence.Status{
			AgentID:    agents[i],
			Timestamp:  presence.FormatTime(now.Add(-time.Duration(i%20) * time.Second)),
			State:      presence.StateAwake,
			Substate:   presence.SubIdle,
			WatcherPID: 10000 + i,
			Channel:    "general",
			Host:       fmt.Sprintf("host-%d", i%9),
			Started:    presence.FormatTime(now.Add(-time.Hour)),
			Counters:   map[string]int64{"handled": int64(i), "failed": 0},
		}
		switch i % 10 {
		case 0:
			s.Host, s.WatcherPID = host, os.Getpid()
		case 1:
			s.Substate, s.MessageID = presence.SubWorking, channel.NewID("alice", now, "abcd")
		case 2:
			s.State, s.Substate = presence.StateOffline, ""
		}
		s.Sign(signers[s.AgentID])
		data, err := s.Encode()
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(root.Presence(), s.AgentID+".json"), data, 0o644); err != nil {
			return "", err
		}
	}
	return root, nil
}
