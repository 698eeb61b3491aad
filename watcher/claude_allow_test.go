package watcher_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// TestRealClaudeAllow runs the real Claude Code against the fake model: a
// shell command it is denied becomes a question to the asker; the answer
// "allow" resumes the session with that command allowed, and the run
// completes with the command's output instead of asking again. Without
// the binary it is skipped, or fails when $COLLAB_TEST_REQUIRE_CLIS is 1.
func TestRealClaudeAllow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real CLI")
	}
	srv := fakemodel.Start(t)
	c := srv.CLI(t, fakemodel.ClaudeCode)
	onlyEnv(t, c.Env)
	root := tree.Root(t.TempDir())
	cfg := config(root, &claude.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env, KillGrace: 2 * time.Second})
	cfg.CLI = "claude"
	cfg.Workdir = c.Dir
	cfg.Timeout = time.Minute
	cfg.Context = -1
	start(t, cfg)

	const cmd = "sh -c 'echo granted-$((6*7))'" // acceptEdits denies a shell
	srv.Next(fakemodel.Shell(cmd))
	m := send(t, root, agent, "Run the command.")
	ask := waitReply(t, root, m.ID)
	if !strings.Contains(ask.Content.Text, "Bash("+cmd+")") || ask.Metadata.Extra["needs_input"] == nil {
		t.Fatalf("reply %q (metadata %s), want a question about Bash(%s)", ask.Content.Text, ask.Metadata.Extra, cmd)
	}
	asked := waitJob(t, root, m.ID, "awaiting input", func(j jobs.Job) bool { return j.Done() && j.Reply != "" })
	if asked.Status != jobs.AwaitingInput || asked.Session == "" {
		t.Fatalf("asking job %s session %q, want awaiting_input with a session", asked.Status, asked.Session)
	}

	// The model tries again once allowed.
	srv.Next(fakemodel.Shell(cmd))
	answer := post(t, root, channel.Message{To: agent, Content: channel.Content{Text: "allow"},
		Metadata: channel.Metadata{InReplyTo: ask.ID, Thread: ask.Metadata.Thread, Hops: ask.Metadata.Hops}})
	got := waitReply(t, root, answer.ID)
	aj := waitJob(t, root, answer.ID, "finished", func(j jobs.Job) bool { return j.Done() && j.Reply != "" })
	if got.Content.Text != "tool said: granted-42" || got.Metadata.Extra["needs_input"] != nil {
		t.Errorf("reply to the answer %q (metadata %s), want the allowed command's output and no question", got.Content.Text, got.Metadata.Extra)
	}
	if aj.Status != jobs.Completed || !aj.Resumed || aj.Session != asked.Session || aj.Question != nil {
		t.Errorf("answer's job %s resumed %v session %q question %+v; want completed, resuming %q, no question",
			aj.Status, aj.Resumed, aj.Session, aj.Question, asked.Session)
	}
	if k := eventKinds(aj.Events); len(k) == 0 || k[0] != modelcli.EventInputSent {
		t.Errorf("answer's job events %v, want input_sent first", k)
	}
}

// waitReply waits (up to a minute: node CLIs start slowly) for the one
// reply to message id.
func waitReply(t *testing.T, root tree.Root, id string) channel.Message {
	t.Helper()
	var rs []channel.Message
	waitForIn(t, time.Minute, "a reply to "+id, func() bool {
		rs = repliesTo(messages(t, root), id)
		return len(rs) > 0
	})
	return rs[0]
}

// onlyEnv unsets, for the test, every variable of the process that env
// does not set: the adapter adds env to the inherited environment, and
// nothing else (an API key, a proxy) may reach the CLI.
func onlyEnv(t *testing.T, env []string) {
	keep := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		keep[k] = true
	}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if !keep[k] {
			t.Setenv(k, v) // restored when the test ends
			os.Unsetenv(k)
		}
	}
}
