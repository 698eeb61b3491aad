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
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// TestRealCodexLive is TestRealClaudeLive with the real Codex CLI (codex
// app-server): three messages answered by one process, the later prompts
// carrying only what is new; a process SIGKILLed between turns is
// restarted resuming its thread; jobs kill interrupts a turn and the
// process carries on.
func TestRealCodexLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real CLI")
	}
	srv := fakemodel.Start(t)
	c := srv.CLI(t, fakemodel.CodexCLI)
	onlyEnv(t, c.Env)
	root := tree.Root(t.TempDir())
	a := &codex.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env, KillGrace: 2 * time.Second}
	pool := live.NewPool(&live.Codex{Adapter: a, KillGrace: 2 * time.Second}, live.Config{})
	t.Cleanup(pool.Close) // after the watcher has stopped
	cfg := config(root, a)
	cfg.CLI, cfg.Live, cfg.Workdir, cfg.Timeout = "codex", pool, c.Dir, time.Minute
	start(t, cfg)

	var recs []jobs.Job
	for _, text := range []string{"First question.", "Second question.", "Third question."} {
		m := send(t, root, agent, text)
		waitReply(t, root, m.ID)
		recs = append(recs, waitJob(t, root, m.ID, "finished", func(j jobs.Job) bool { return j.Done() && j.Reply != "" }))
	}
	for i, j := range recs {
		if j.Status != jobs.Completed || j.PID <= 0 || j.PID != recs[0].PID || j.Session == "" || j.Session != recs[0].Session {
			t.Errorf("job %d: %s, pid %d, thread %q; want completed by pid %d in %q", i, j.Status, j.PID, j.Session, recs[0].PID, recs[0].Session)
		}
	}
	reqs := srv.Requests()
	first, third := reqs[0].Prompt(), reqs[len(reqs)-1].Prompt()
	if len(third) >= len(first) || !strings.Contains(third, "Third question.") || strings.Contains(third, "First question.") {
		t.Errorf("third prompt (%d bytes), want less than the first (%d) with only what is new:\n%s", len(third), len(first), third)
	}

	// Killed between turns: the next message restarts it, resuming.
	thread := recs[2].Session
	waitRolloutIn(t, filepath.Join(c.Home, ".codex"), thread, "Third question.")
	if err := syscall.Kill(-recs[2].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed process to go", func() bool { return !proc.PIDAlive(recs[2].PID) })
	m := send(t, root, agent, "Fourth question.")
	waitReply(t, root, m.ID)
	j := waitJob(t, root, m.ID, "finished", func(j jobs.Job) bool { return j.Done() && j.Reply != "" })
	if j.Status != jobs.Completed || j.PID == recs[2].PID || j.Session != thread {
		t.Errorf("after the kill: %s, pid %d, thread %q; want completed by a new process in %q", j.Status, j.PID, j.Session, thread)
	}
	holds(t, 300*time.Millisecond, "one reply", func() bool { return len(repliesTo(messages(t, root), m.ID)) == 1 })
	if tr := srv.Requests()[len(srv.Requests())-1].Transcript(); !strings.Contains(tr, "Third question.") {
		t.Errorf("the resumed turn did not carry the earlier ones:\n%s", tr)
	}

	// jobs kill interrupts the turn (turn/interrupt): the job is killed,
	// no reply, and the same process answers the next message.
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

// waitRolloutIn waits until Codex (CODEX_HOME home) has written text into
// the rollout of thread: a process killed before that is resumed without
// the turn.
func waitRolloutIn(t *testing.T, home, thread, text string) {
	t.Helper()
	waitForIn(t, time.Minute, "the rollout saved", func() bool {
		files, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "*"+thread+".jsonl"))
		for _, f := range files {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), text) {
				return true
			}
		}
		return false
	})
}
