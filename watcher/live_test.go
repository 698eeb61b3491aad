package watcher_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/live"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// TestRealClaudeLive runs the real Claude Code against the fake model
// with Config.Live (collab watch --live): three messages in a row are
// answered by one process, the later prompts carrying only what is new;
// the process SIGKILLed between turns is restarted resuming the session,
// and the next message is answered once; jobs kill interrupts a turn and
// the process carries on. Without the binary it is
// skipped, or fails when $COLLAB_TEST_REQUIRE_CLIS is 1.
func TestRealClaudeLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real CLI")
	}
	srv := fakemodel.Start(t)
	c := srv.CLI(t, fakemodel.ClaudeCode)
	onlyEnv(t, c.Env)
	root := tree.Root(t.TempDir())
	a := &claude.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env, KillGrace: 2 * time.Second}
	pool := live.NewPool(&live.Claude{Adapter: a, KillGrace: 2 * time.Second}, live.Config{})
	t.Cleanup(pool.Close) // after the watcher has stopped
	cfg := config(root, a)
	cfg.CLI, cfg.Live, cfg.Workdir, cfg.Timeout = "claude", pool, c.Dir, time.Minute
	start(t, cfg)

	var recs []jobs.Job
	var last string // the last reply's text
	for _, text := range []string{"First question.", "Second question.", "Third question."} {
		m := send(t, root, agent, text)
		last = waitReply(t, root, m.ID).Content.Text
		recs = append(recs, waitJob(t, root, m.ID, "finished", func(j jobs.Job) bool { return j.Done() && j.Reply != "" }))
	}
	for i, j := range recs {
		if j.Status != jobs.Completed || j.PID <= 0 || j.PID != recs[0].PID {
			t.Errorf("job %d: %s, pid %d; want completed by pid %d", i, j.Status, j.PID, recs[0].PID)
		}
	}
	reqs := srv.Requests()
	first, third := reqs[0].Prompt(), reqs[len(reqs)-1].Prompt()
	if len(third) >= len(first) || !strings.Contains(third, "Third question.") || strings.Contains(third, "First question.") {
		t.Errorf("third prompt (%d bytes), want less than the first (%d) with only what is new:\n%s", len(third), len(first), third)
	}

	// Killed between turns: the next message restarts it, resuming.
	session := recs[2].Session
	waitSavedIn(t, c.Home, session, "Third question.", last)
	if err := syscall.Kill(-recs[2].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed process to go", func() bool { return !proc.PIDAlive(recs[2].PID) })
	m := send(t, root, agent, "Fourth question.")
	waitReply(t, root, m.ID)
	j := waitJob(t, root, m.ID, "finished", func(j jobs.Job) bool { return j.Done() && j.Reply != "" })
	if j.Status != jobs.Completed || j.PID == recs[2].PID || j.Session != session {
		t.Errorf("after the kill: %s, pid %d, session %q; want completed by a new process in %q", j.Status, j.PID, j.Session, session)
	}
	holds(t, 300*time.Millisecond, "one reply", func() bool { return len(repliesTo(messages(t, root), m.ID)) == 1 })
	if tr := srv.Requests()[len(srv.Requests())-1].Transcript(); !strings.Contains(tr, "Third question.") {
		t.Errorf("the resumed turn did not carry the earlier ones:\n%s", tr)
	}

	// jobs kill interrupts the turn through the protocol: the job is
	// killed, no reply, and the same process answers the next message.
	srv.Next(fakemodel.Text("an answer that never ends").Hung())
	n := len(srv.Requests())
	hung := send(t, root, agent, "Fifth question.")
	running := waitJob(t, root, hung.ID, "running", func(j jobs.Job) bool { return j.Status == jobs.Running && j.PID > 0 })
	waitForIn(t, time.Minute, "the hung model call", func() bool { return len(srv.Requests()) > n })
	if err := jobs.RequestKill(root, agent, running.ID, "alice", nil); err != nil {
		t.Fatal(err)
	}
	killed := waitJob(t, root, hung.ID, "killed", func(j jobs.Job) bool { return j.Done() })
	if killed.Status != jobs.Killed || len(repliesTo(messages(t, root), hung.ID)) != 0 {
		t.Errorf("killed job: %s, %d replies; want killed, none", killed.Status, len(repliesTo(messages(t, root), hung.ID)))
	}
	m = send(t, root, agent, "Sixth question.")
	waitReply(t, root, m.ID)
	if j := waitJob(t, root, m.ID, "finished", func(j jobs.Job) bool { return j.Done() && j.Reply != "" }); j.PID != running.PID {
		t.Errorf("after the interrupt: pid %d, want the same process %d", j.PID, running.PID)
	}
}

// waitSavedIn waits until Claude Code (HOME home) has written the answer
// after the prompt into the transcript of session, which it does shortly
// after the turn's result: a process killed before that is resumed
// without the turn.
func waitSavedIn(t *testing.T, home, session, prompt, answer string) {
	t.Helper()
	waitForIn(t, time.Minute, "the session saved", func() bool {
		files, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", session+".jsonl"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if _, after, ok := strings.Cut(string(b), prompt); ok && strings.Contains(after, answer) {
				return true
			}
		}
		return false
	})
}
