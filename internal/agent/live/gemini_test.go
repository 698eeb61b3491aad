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
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
	"github.com/collabdev/collab/internal/testsupport/clitest"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// The tests below run the real Gemini CLI against fakemodel (see
// clitest.RealCLI): without the binary they are skipped, or fail when
// $COLLAB_TEST_REQUIRE_CLIS is 1.

func realGeminiPool(t *testing.T) (*Pool, *fakemodel.Server, modelcli.Request) {
	t.Helper()
	s, c, req := clitest.RealCLI(t, fakemodel.GeminiCLI)
	req.Env = c.Env
	a := &gemini.Adapter{Bin: c.Path, Model: c.Model}
	p := NewPool(&Gemini{Adapter: a, KillGrace: 2 * time.Second, InterruptGrace: 2 * time.Second}, Config{})
	t.Cleanup(p.Close)
	home = c.Home
	return p, s, req
}

// waitGeminiSaved waits until Gemini CLI has recorded text in a session
// file of its HOME (~/.gemini/tmp/PROJECT/chats).
func waitGeminiSaved(t *testing.T, text string) {
	t.Helper()
	waitFor(t, func() bool {
		found := false
		filepath.WalkDir(filepath.Join(home, ".gemini"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(p, "chats") {
				if b, _ := os.ReadFile(p); strings.Contains(string(b), text) {
					found = true
				}
			}
			return nil
		})
		return found
	})
}

func TestRealGeminiTurns(t *testing.T) {
	p, s, req := realGeminiPool(t)
	var pids []int
	var session string
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
		if resp.Session == "" || (session != "" && resp.Session != session) || resp.Usage.Output <= 0 {
			t.Errorf("turn %d: session %q (first %q), usage %+v", i, resp.Session, session, resp.Usage)
		}
		session = resp.Session
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

// Gemini CLI advertises loadSession: a process killed between turns is
// replaced by one that loads the session, and the next turn carries the
// earlier ones.
//
// Gemini CLI 0.61 names a session's file by the minute it started and
// the session id, and a session/load starts by recording a fresh
// conversation under the same id: in the minute the session started,
// into the same file, whose history is then lost and the load refused
// (the watcher then starts a new session with the whole prompt). The
// test loads in a later minute, as a conversation idle for --live-idle
// does.
func TestRealGeminiKilledBetweenTurns(t *testing.T) {
	p, s, req := realGeminiPool(t)
	began := time.Now().UTC().Truncate(time.Minute)
	var pid int
	req.Prompt, req.OnStart = "Remember the word pelican.", func(n int) { pid = n }
	first, err := p.Turn(context.Background(), "ch", req)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, first.Stderr)
	}
	waitGeminiSaved(t, "echo: Remember the word pelican.")
	syscall.Kill(-pid, syscall.SIGKILL)
	waitFor(t, func() bool { st := p.Stats(); return len(st) == 1 && syscall.Kill(pid, 0) != nil })
	if d := time.Until(began.Add(time.Minute)); d > 0 {
		time.Sleep(d) // the next minute: see above
	}
	old, before := pid, len(s.Requests())
	req.Prompt = "Which word?"
	again, err := p.Turn(context.Background(), "ch", req)
	if err != nil {
		t.Fatalf("after kill: %v\nstderr: %s", err, again.Stderr)
	}
	if again.Text != "echo: Which word?" || again.Session != first.Session || pid == old {
		t.Errorf("got %q in session %q, pid %d; want the echo in %q (resumed), a new process", again.Text, again.Session, pid, first.Session)
	}
	reqs := s.Requests()
	if n := len(reqs) - before; n != 1 {
		t.Errorf("%d model calls for the turn, want it answered once", n)
	}
	if tr := reqs[len(reqs)-1].Transcript(); !strings.Contains(tr, "Remember the word pelican.") {
		t.Errorf("the resumed turn did not carry the first:\n%s", tr)
	}
}

func TestRealGeminiSessionGone(t *testing.T) {
	p, _, req := realGeminiPool(t)
	req.Prompt, req.Session = "hello", "00000000-0000-4000-8000-000000000000"
	if _, err := p.Turn(context.Background(), "ch", req); !errors.Is(err, modelcli.ErrSessionGone) {
		t.Fatalf("got %v, want ErrSessionGone", err)
	}
}

func TestRealGeminiInterrupt(t *testing.T) {
	p, s, req := realGeminiPool(t)
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
		t.Fatalf("after the interrupt: %q, %v\nstderr: %s", resp.Text, err, resp.Stderr)
	}
	if len(pids) != 2 || pids[0] != pids[1] {
		t.Errorf("pids %v, want the cancelled turn's process to take the next", pids)
	}
}

func TestRealGeminiTool(t *testing.T) {
	p, s, req := realGeminiPool(t)
	note := filepath.Join(req.Dir, "note.txt")
	if err := os.WriteFile(note, []byte("tool-output-42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Next(fakemodel.ReadFile(note))
	var kinds []string
	req.Prompt, req.OnEvent = "Read the note.", func(e modelcli.Event) { kinds = append(kinds, clitest.Kinds([]modelcli.Event{e})...) }
	resp, err := p.Turn(context.Background(), "ch", req)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, resp.Stderr)
	}
	if !strings.HasPrefix(resp.Text, "tool said: ") {
		t.Errorf("got text %q, want the tool's output", resp.Text)
	}
	if want := []string{"started", "tool_call:read_file", "progress", "completed"}; !slices.Equal(kinds, want) {
		t.Errorf("events: got %v, want %v", kinds, want)
	}
}

// What the approval mode (auto_edit) does not allow without asking, the
// shell, is refused: the command never runs, and the turn goes on.
func TestRealGeminiPermissionRefused(t *testing.T) {
	p, s, req := realGeminiPool(t)
	marker := filepath.Join(req.Dir, "ran")
	s.Next(fakemodel.Shell("touch " + marker))
	var texts []string
	req.Prompt, req.OnEvent = "Run it.", func(e modelcli.Event) { texts = append(texts, e.Text) }
	resp, err := p.Turn(context.Background(), "ch", req)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, resp.Stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the shell command ran")
	}
	if !slices.ContainsFunc(texts, func(s string) bool { return strings.HasPrefix(s, "[gemini] permission refused: ") }) {
		t.Errorf("no refusal among the events %q", texts)
	}
}
