package live

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/testsupport/clitest"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// The tests below run the real Codex CLI (codex app-server) against
// fakemodel (see clitest.RealCLI): without the binary they are skipped,
// or fail when $COLLAB_TEST_REQUIRE_CLIS is 1.

func realCodexPool(t *testing.T) (*Pool, *fakemodel.Server, modelcli.Request) {
	t.Helper()
	s, c, req := clitest.RealCLI(t, fakemodel.CodexCLI)
	req.Env = c.Env
	a := &codex.Adapter{Bin: c.Path, Model: c.Model}
	p := NewPool(&Codex{Adapter: a, KillGrace: 2 * time.Second, InterruptGrace: 2 * time.Second}, Config{})
	t.Cleanup(p.Close)
	codexHome = filepath.Join(c.Home, ".codex")
	return p, s, req
}

// codexHome is the real CLI's CODEX_HOME of the running test (tests here
// are not parallel).
var codexHome string

// waitRollout waits until Codex has written text into the rollout of
// thread: a process killed before that cannot be resumed with the turn.
func waitRollout(t *testing.T, thread, text string) {
	t.Helper()
	waitFor(t, func() bool {
		files, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "*"+thread+".jsonl"))
		for _, f := range files {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), text) {
				return true
			}
		}
		return false
	})
}

func TestRealCodexTurns(t *testing.T) {
	p, s, req := realCodexPool(t)
	var pids []int
	var thread string
	var input int64
	for i, prompt := range []string{"Remember the word pelican.", "Which word?", "Once more."} {
		var kinds []string
		req.Prompt = prompt
		req.OnStart = func(pid int) { pids = append(pids, pid) }
		req.OnEvent = func(e modelcli.Event) { kinds = append(kinds, e.Kind) }
		resp, err := p.Turn(context.Background(), "ch", req)
		if err != nil {
			t.Fatalf("turn %d: %v\nstderr: %s", i, err, resp.Stderr)
		}
		if want := "echo: " + prompt; resp.Text != want {
			t.Errorf("turn %d: text %q, want %q", i, resp.Text, want)
		}
		if want := []string{"started", "progress", "completed"}; !slices.Equal(kinds, want) {
			t.Errorf("turn %d: events %v, want %v", i, kinds, want)
		}
		if resp.Usage.Input <= 0 || resp.Usage.Output <= 0 || resp.Usage.Model != fakemodel.CodexModel {
			t.Errorf("turn %d: usage %+v, want this turn's tokens of %s", i, resp.Usage, fakemodel.CodexModel)
		}
		if i == 0 {
			thread, input = resp.Session, resp.Usage.Input
		} else if 2*resp.Usage.Input > 3*input {
			t.Errorf("turn %d: %d input tokens, want this turn's (the first had %d)", i, resp.Usage.Input, input)
		}
		if resp.Session == "" || resp.Session != thread {
			t.Errorf("turn %d: session %q, want the first's %q", i, resp.Session, thread)
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

func TestRealCodexKilledBetweenTurns(t *testing.T) {
	p, s, req := realCodexPool(t)
	var pid int
	req.Prompt, req.OnStart = "Remember the word pelican.", func(n int) { pid = n }
	first, err := p.Turn(context.Background(), "ch", req)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, first.Stderr)
	}
	waitRollout(t, first.Session, "echo: Remember the word pelican.")
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
	if 2*again.Usage.Input > 3*first.Usage.Input {
		t.Errorf("after the restart: %d input tokens, want the turn's (the first had %d)", again.Usage.Input, first.Usage.Input)
	}
	reqs := s.Requests()
	if tr := reqs[len(reqs)-1].Transcript(); !strings.Contains(tr, "Remember the word pelican.") {
		t.Errorf("the resumed turn did not carry the first:\n%s", tr)
	}
}

func TestRealCodexResumeUnknownThread(t *testing.T) {
	p, _, req := realCodexPool(t)
	req.Prompt, req.Session = "hello", "0199a213-81c0-7800-8aa1-bbab2a035a53"
	_, err := p.Turn(context.Background(), "ch", req)
	if !errors.Is(err, modelcli.ErrSessionGone) {
		t.Fatalf("got %v, want ErrSessionGone", err)
	}
	req.Session = "not-a-thread"
	if _, err := p.Turn(context.Background(), "ch", req); !errors.Is(err, modelcli.ErrSessionGone) {
		t.Fatalf("got %v, want ErrSessionGone", err)
	}
}

func TestRealCodexInterrupt(t *testing.T) {
	p, s, req := realCodexPool(t)
	s.Next(fakemodel.Text("never finished").Hung())
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		if _, err := s.WaitRequests(ctx, 1); err == nil {
			cancel()
		}
	}()
	var pids []int
	req.Prompt, req.OnStart = "hello", func(n int) { pids = append(pids, n) }
	start := time.Now()
	_, err := p.Turn(ctx, "ch", req)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 30*time.Second {
		t.Fatalf("got %v after %v, want context.Canceled soon", err, time.Since(start))
	}
	// The next turn goes to the same process.
	req.Prompt = "after"
	resp, err := p.Turn(context.Background(), "ch", req)
	if err != nil || resp.Text != "echo: after" {
		t.Fatalf("after the interrupt: %q, %v", resp.Text, err)
	}
	if len(pids) != 2 || pids[0] != pids[1] {
		t.Errorf("pids %v, want one process", pids)
	}
}

func TestRealCodexKilledMidTurn(t *testing.T) {
	p, s, req := realCodexPool(t)
	req.Prompt = "Remember the word pelican."
	done, err := p.Turn(context.Background(), "ch", req)
	if err != nil {
		t.Fatal(err)
	}
	waitRollout(t, done.Session, "echo: Remember the word pelican.")
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
	if resp.Text != "echo: Which word?" || len(pids) != 2 || pids[0] == pids[1] || resp.Session != done.Session {
		t.Errorf("got %q in %q, pids %v; want the echo from a second process in %q", resp.Text, resp.Session, pids, done.Session)
	}
}

// TestRealCodexToolCall: a turn's command is a tool-call event, as
// codex exec's command_execution item is, and runs without asking (the
// sandbox of codex exec, approval policy "never").
func TestRealCodexToolCall(t *testing.T) {
	p, s, req := realCodexPool(t)
	s.Next(fakemodel.Shell("echo from-the-tool"))
	var calls []modelcli.Event
	req.Prompt = "Run the tool."
	req.OnEvent = func(e modelcli.Event) {
		if e.Kind == modelcli.EventToolCall {
			calls = append(calls, e)
		}
	}
	resp, err := p.Turn(context.Background(), "ch", req)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, resp.Stderr)
	}
	if resp.Text != "tool said: from-the-tool" {
		t.Errorf("text %q, want the tool's output", resp.Text)
	}
	if len(calls) != 1 || calls[0].Tool != "command_execution" || !strings.Contains(calls[0].Text, "echo from-the-tool") {
		t.Errorf("tool calls %+v, want the command once", calls)
	}
}
