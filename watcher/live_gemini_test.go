package watcher_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/live"
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// TestRealGeminiLive runs the real Gemini CLI against the fake model with
// Config.Live (collab watch --live --cli gemini): three messages in a row
// are answered by one process, the later prompts carrying only what is
// new; jobs kill interrupts a turn (session/cancel) and the process
// carries on; a process SIGKILLed mid-turn is replaced and the message
// answered once. (A restart that loads the session is
// internal/agent/live's TestRealGeminiKilledBetweenTurns.) Without the
// binary it is skipped, or fails when $COLLAB_TEST_REQUIRE_CLIS is 1.
func TestRealGeminiLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real CLI")
	}
	srv := fakemodel.Start(t)
	c := srv.CLI(t, fakemodel.GeminiCLI)
	onlyEnv(t, c.Env)
	root := tree.Root(t.TempDir())
	a := &gemini.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env, KillGrace: 2 * time.Second}
	pool := live.NewPool(&live.Gemini{Adapter: a, KillGrace: 2 * time.Second}, live.Config{})
	t.Cleanup(pool.Close) // after the watcher has stopped
	cfg := config(root, a)
	cfg.CLI, cfg.Live, cfg.Workdir, cfg.Timeout = "gemini", pool, c.Dir, time.Minute
	start(t, cfg)

	var recs []jobs.Job
	for _, text := range []string{"First question.", "Second question.", "Third question."} {
		m := send(t, root, agent, text)
		waitReply(t, root, m.ID)
		recs = append(recs, waitJob(t, root, m.ID, "finished", func(j jobs.Job) bool { return j.Done() && j.Reply != "" }))
	}
	for i, j := range recs {
		if j.Status != jobs.Completed || j.PID <= 0 || j.PID != recs[0].PID || j.Session == "" || j.Session != recs[0].Session {
			t.Errorf("job %d: %s, pid %d, session %q; want completed by pid %d in %q", i, j.Status, j.PID, j.Session, recs[0].PID, recs[0].Session)
		}
	}
	reqs := srv.Requests()
	first, third := reqs[0].Prompt(), reqs[len(reqs)-1].Prompt()
	if len(third) >= len(first) || !strings.Contains(third, "Third question.") || strings.Contains(third, "First question.") {
		t.Errorf("third prompt (%d bytes), want less than the first (%d) with only what is new:\n%s", len(third), len(first), third)
	}
	if tr := reqs[len(reqs)-1].Transcript(); !strings.Contains(tr, "First question.") {
		t.Errorf("the third turn did not carry the first:\n%s", tr)
	}

	// jobs kill interrupts the turn through the protocol: the job is
	// killed, no reply, and the same process answers the next message.
	srv.Next(fakemodel.Text("an answer that never ends").Hung())
	n := len(srv.Requests())
	hung := send(t, root, agent, "Fourth question.")
	running := waitJob(t, root, hung.ID, "running", func(j jobs.Job) bool { return j.Status == jobs.Running && j.PID > 0 })
	waitForIn(t, time.Minute, "the hung model call", func() bool { return len(srv.Requests()) > n })
	if err := jobs.RequestKill(root, agent, running.ID, "alice", nil); err != nil {
		t.Fatal(err)
	}
	killed := waitJob(t, root, hung.ID, "killed", func(j jobs.Job) bool { return j.Done() })
	if killed.Status != jobs.Killed || len(repliesTo(messages(t, root), hung.ID)) != 0 {
		t.Errorf("killed job: %s, %d replies; want killed, none", killed.Status, len(repliesTo(messages(t, root), hung.ID)))
	}
	m := send(t, root, agent, "Fifth question.")
	waitReply(t, root, m.ID)
	if j := waitJob(t, root, m.ID, "finished", func(j jobs.Job) bool { return j.Done() && j.Reply != "" }); j.PID != running.PID {
		t.Errorf("after the interrupt: pid %d, want the same process %d", j.PID, running.PID)
	}

	// The process SIGKILLed mid-turn: the turn is run again in a new
	// process (resuming the session, or, within the minute the session
	// began, in a new one with the whole prompt) and the message is
	// answered once.
	srv.Next(fakemodel.Text("an answer cut short").Hung())
	n = len(srv.Requests())
	cut := send(t, root, agent, "Sixth question.")
	waitForIn(t, time.Minute, "the hung model call", func() bool { return len(srv.Requests()) > n })
	if err := syscall.Kill(-running.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got := waitReply(t, root, cut.ID)
	j := waitJob(t, root, cut.ID, "finished", func(j jobs.Job) bool { return j.Done() && j.Reply != "" })
	last := srv.Requests()[len(srv.Requests())-1]
	if j.Status != jobs.Completed || j.PID == running.PID || !strings.HasPrefix(got.Content.Text, "echo: ") || !strings.Contains(last.Prompt(), "Sixth question.") {
		t.Errorf("after the kill: %s by pid %d, reply %q; want completed by a new process, the echo", j.Status, j.PID, got.Content.Text)
	}
	holds(t, 300*time.Millisecond, "one reply", func() bool { return len(repliesTo(messages(t, root), cut.ID)) == 1 })
}
