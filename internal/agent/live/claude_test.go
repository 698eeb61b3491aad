package live

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/testsupport/clitest"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// The tests below run the real Claude Code against fakemodel (see
// clitest.RealCLI): without the binary they are skipped, or fail when
// $COLLAB_TEST_REQUIRE_CLIS is 1.

func realPool(t *testing.T) (*Pool, *fakemodel.Server, modelcli.Request) {
	t.Helper()
	s, c, req := clitest.RealCLI(t, fakemodel.ClaudeCode)
	req.Env = c.Env
	a := &claude.Adapter{Bin: c.Path, Model: c.Model}
	p := NewPool(&Claude{Adapter: a, KillGrace: 2 * time.Second, InterruptGrace: 2 * time.Second}, Config{})
	t.Cleanup(p.Close)
	home = c.Home
	return p, s, req
}

// home is the real CLI's HOME of the running test (tests here are not
// parallel).
var home string

// waitSaved waits until Claude Code has written text into the transcript
// of session, which it does shortly after the turn's result line: a
// process killed before that cannot be resumed with the turn.
func waitSaved(t *testing.T, session, text string) {
	t.Helper()
	waitFor(t, func() bool {
		files, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", session+".jsonl"))
		for _, f := range files {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), text) {
				return true
			}
		}
		return false
	})
}

func TestRealClaudeTurns(t *testing.T) {
	p, s, req := realPool(t)
	var pids []int
	var cost float64
	for i, prompt := range []string{"Remember the word pelican.", "Which word?", "Once more."} {
		req.Prompt = prompt
		req.OnStart = func(pid int) { pids = append(pids, pid) }
		resp, err := p.Turn(context.Background(), "ch", req)
		if err != nil {
			t.Fatalf("turn %d: %v\nstderr: %s", i, err, resp.Stderr)
		}
		if want := "echo: " + prompt; resp.Text != want {
			t.Errorf("turn %d: text %q, want %q", i, resp.Text, want)
		}
		if i == 0 {
			cost = resp.CostUSD
		} else if resp.CostUSD <= 0 || resp.CostUSD > 2*cost {
			t.Errorf("turn %d: cost %v, want this turn's (the first cost %v)", i, resp.CostUSD, cost)
		}
		req.Session = resp.Session
	}
	if len(pids) != 3 || pids[0] != pids[1] || pids[1] != pids[2] {
		t.Errorf("pids %v, want one process", pids)
	}
	reqs := s.Requests()
	if tr := reqs[len(reqs)-1].Transcript(); !strings.Contains(tr, "echo: Remember the word pelican.") {
		t.Errorf("the third turn did not carry the first:\n%s", tr)
	}
}

func TestRealClaudeKilledBetweenTurns(t *testing.T) {
	p, s, req := realPool(t)
	var pid int
	req.Prompt, req.OnStart = "Remember the word pelican.", func(n int) { pid = n }
	first, err := p.Turn(context.Background(), "ch", req)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, first.Stderr)
	}
	waitSaved(t, first.Session, "echo: Remember the word pelican.")
	syscall.Kill(-pid, syscall.SIGKILL)
	waitFor(t, func() bool { st := p.Stats(); return len(st) == 1 && syscall.Kill(pid, 0) != nil })
	old := pid
	req.Prompt = "Which word?"
	again, err := p.Turn(context.Background(), "ch", req)
	if err != nil {
		t.Fatalf("after kill: %v\nstderr: %s", err, again.Stderr)
	}
	if again.Text != "echo: Which word?" || again.Session != first.Session || pid == old {
		t.Errorf("got %q in session %q, pid %d; want the echo in %q, a new process", again.Text, again.Session, pid, first.Session)
	}
	reqs := s.Requests()
	if tr := reqs[len(reqs)-1].Transcript(); !strings.Contains(tr, "Remember the word pelican.") {
		t.Errorf("the resumed turn did not carry the first:\n%s", tr)
	}
}

func TestRealClaudeKilledMidTurn(t *testing.T) {
	p, s, req := realPool(t)
	req.Prompt = "Remember the word pelican."
	done, err := p.Turn(context.Background(), "ch", req)
	if err != nil {
		t.Fatal(err)
	}
	waitSaved(t, done.Session, "echo: Remember the word pelican.")
	s.Next(fakemodel.Text("never finished").Hung())
	var pids []int
	first := make(chan int, 1)
	req.Prompt, req.OnStart = "Which word?", func(n int) {
		if len(pids) == 0 {
			first <- n
		}
		pids = append(pids, n)
	}
	go func() {
		pid := <-first
		if _, err := s.WaitRequests(context.Background(), 2); err == nil {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	}()
	resp, err := p.Turn(context.Background(), "ch", req)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, resp.Stderr)
	}
	if resp.Text != "echo: Which word?" || len(pids) != 2 || pids[0] == pids[1] {
		t.Errorf("got %q, pids %v; want the echo from a second process", resp.Text, pids)
	}
}

func TestRealClaudeInterrupt(t *testing.T) {
	p, s, req := realPool(t)
	s.Next(fakemodel.Text("never finished").Hung())
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		if _, err := s.WaitRequests(ctx, 1); err == nil {
			cancel()
		}
	}()
	req.Prompt = "hello"
	start := time.Now()
	_, err := p.Turn(ctx, "ch", req)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 30*time.Second {
		t.Fatalf("got %v after %v, want context.Canceled soon", err, time.Since(start))
	}
	// The next turn goes to the same process; the interrupted prompt
	// stays in the conversation.
	req.Prompt = "after"
	resp, err := p.Turn(context.Background(), "ch", req)
	if err != nil || resp.Text == "" {
		t.Fatalf("after the interrupt: %q, %v", resp.Text, err)
	}
	reqs := s.Requests()
	if tr := reqs[len(reqs)-1].Transcript(); !strings.Contains(tr, "after") {
		t.Errorf("the turn after the interrupt did not carry its prompt:\n%s", tr)
	}
}

// waitFor polls cond for up to a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in a minute")
		}
	}
}
