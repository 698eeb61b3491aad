package watcher_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/live"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
	"github.com/collabdev/collab/watcher"
)

// TestRealLiveAsk runs each real CLI live against the fake model: the
// model runs a shell command its permission mode asks about; the question
// is posted to the sender mid-run, the job awaits input, the sender's
// "allow" goes to the waiting turn, the command runs, and the same
// process answers the message, and then the next one. Without the
// binaries it is skipped, or fails when $COLLAB_TEST_REQUIRE_CLIS is 1.
func TestRealLiveAsk(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real CLIs")
	}
	for _, tt := range []struct {
		cli   string
		which string
		pool  func(c *fakemodel.CLI) (watcher.Runner, live.Starter)
	}{
		{"claude", fakemodel.ClaudeCode, func(c *fakemodel.CLI) (watcher.Runner, live.Starter) {
			a := &claude.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env, KillGrace: 2 * time.Second}
			return a, &live.Claude{Adapter: a, KillGrace: 2 * time.Second}
		}},
		{"codex", fakemodel.CodexCLI, func(c *fakemodel.CLI) (watcher.Runner, live.Starter) {
			a := &codex.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env, KillGrace: 2 * time.Second}
			return a, &live.Codex{Adapter: a, KillGrace: 2 * time.Second}
		}},
		{"gemini", fakemodel.GeminiCLI, func(c *fakemodel.CLI) (watcher.Runner, live.Starter) {
			a := &gemini.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env, KillGrace: 2 * time.Second}
			return a, &live.Gemini{Adapter: a, KillGrace: 2 * time.Second}
		}},
	} {
		t.Run(tt.cli, func(t *testing.T) {
			srv := fakemodel.Start(t)
			c := srv.CLI(t, tt.which)
			onlyEnv(t, c.Env)
			root := tree.Root(t.TempDir())
			runner, starter := tt.pool(c)
			pool := live.NewPool(starter, live.Config{})
			t.Cleanup(pool.Close) // after the watcher has stopped
			cfg := config(root, runner)
			cfg.CLI, cfg.Live, cfg.Workdir, cfg.Timeout = tt.cli, pool, c.Dir, time.Minute
			start(t, cfg)

			marker := filepath.Join(t.TempDir(), "ran")
			srv.Next(fakemodel.ShellAsking("touch " + marker + " && echo granted-42"))
			m := send(t, root, agent, "Run it.")
			q := waitQuestion(t, root, m.ID)
			asking := waitJob(t, root, m.ID, "awaiting input", func(j jobs.Job) bool { return j.Status == jobs.AwaitingInput })
			if !strings.Contains(q.Content.Text, "touch "+marker) || asking.PID <= 0 {
				t.Fatalf("question %q (job pid %d), want one naming the command", q.Content.Text, asking.PID)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran before the answer")
			}
			post(t, root, channel.Message{To: agent, Content: channel.Content{Text: "allow"}, Metadata: channel.Metadata{InReplyTo: q.ID}})
			got := waitReply(t, root, m.ID)
			done := waitJob(t, root, m.ID, "finished", func(j jobs.Job) bool { return j.Done() && j.Reply != "" })
			if _, err := os.Stat(marker); err != nil || !strings.Contains(got.Content.Text, "granted-42") {
				t.Errorf("reply %q (marker: %v), want the allowed command's output", got.Content.Text, err)
			}
			if done.Status != jobs.Completed || done.PID != asking.PID {
				t.Errorf("job %s pid %d, want completed by the asking process %d", done.Status, done.PID, asking.PID)
			}
			next := send(t, root, agent, "Thanks.")
			waitReply(t, root, next.ID)
			if j := waitJob(t, root, next.ID, "finished", func(j jobs.Job) bool { return j.Done() && j.Reply != "" }); j.PID != asking.PID {
				t.Errorf("next message's pid %d, want the same process %d", j.PID, asking.PID)
			}
		})
	}
}
