package watcher_test

import (
	"context"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/live"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// sleepStarter starts sleepSessions: a real process (sleep, in a group of
// its own) whose turns the test answers.
type sleepStarter struct{ t *testing.T }

func (s sleepStarter) Start(context.Context, live.Options) (live.Session, error) {
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	sess := &sleepSession{cmd: cmd, done: done}
	s.t.Cleanup(func() { sess.Close() })
	return sess, nil
}

type sleepSession struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (s *sleepSession) Turn(_ context.Context, req modelcli.Request) (modelcli.Response, error) {
	if req.OnStart != nil {
		req.OnStart(s.PID())
	}
	return modelcli.Response{Text: "live reply", Session: "sess-1"}, nil
}
func (s *sleepSession) Interrupt(context.Context) error { return nil }
func (s *sleepSession) Close() error {
	syscall.Kill(-s.PID(), syscall.SIGKILL)
	<-s.done
	return nil
}
func (s *sleepSession) PID() int              { return s.cmd.Process.Pid }
func (s *sleepSession) SessionID() string     { return "sess-1" }
func (s *sleepSession) Done() <-chan struct{} { return s.done }

// TestLivePresence: a watcher with a live pool writes its warm processes
// and their memory into its heartbeat, which collab who shows.
func TestLivePresence(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep")
	}
	root := tree.Root(t.TempDir())
	pool := live.NewPool(sleepStarter{t}, live.Config{Max: 3})
	t.Cleanup(pool.Close)
	cfg := config(root, &fakeRunner{})
	cfg.Live = pool
	start(t, cfg)
	m := send(t, root, agent, "hello")
	waitReplies(t, root, m.ID)

	// The first heartbeats after the start may read the memory before
	// the next reading (live.RSSEvery); wait for one that has it.
	var s presence.Status
	waitForIn(t, live.RSSEvery+waitLong, "a heartbeat with the live process's memory", func() bool {
		s = readPresence(t, root, agent)
		return s.Live != nil && len(s.Live.Processes) == 1 && s.Live.Processes[0].RSSBytes > 0
	})
	l := s.Live
	if l.Sessions != 1 || l.Max != 3 || l.RSSBytes != l.Processes[0].RSSBytes || l.Processes[0].Key == "" || l.Processes[0].PID <= 0 {
		t.Errorf("live %+v", l)
	}

	rows, err := delivery.Who(root, []string{agent}, time.Now(), 0, testHost, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	table := delivery.WhoTable(rows, time.Now())
	col := slices.Index(table[0], "LIVE")
	if col < 0 || len(rows) != 1 {
		t.Fatalf("who table %v", table)
	}
	if got, want := table[1][col], rows[0].LiveCell(); got != want || got[:4] != "1/3," {
		t.Errorf("LIVE %q, want 1/3 and its memory", got)
	}
	if e := delivery.WhoEntries(rows, time.Now()); e[0].Status == nil || e[0].Status.Live == nil || e[0].Status.Live.Processes[0].PID != l.Processes[0].PID {
		t.Errorf("who --json: %+v", e[0].Status)
	}
}
