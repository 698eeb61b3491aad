package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// TestWatchMCPRealCLIs: `collab watch --mcp` with the real claude and codex
// CLIs. The fake model calls the MCP tool channel_send mid-task (Codex
// defers MCP tools: the model first finds it with tool_search); the
// message lands on the channel of the message being answered (the watcher
// watches two), from the agent, one hop deeper; then the model's final
// words, which quote the tool's result, are the reply. A message on the
// other channel gets tools on that channel (document_append), and the
// first channel's session resumes with the tools still there
// (document_create). The root has a space in it: every argument of the
// server stays one argument.
func TestWatchMCPRealCLIs(t *testing.T) {
	for _, tc := range []struct {
		cli, name string
		calls     string // the tool calls the model made, as the CLI sent them back
	}{
		{"claude", fakemodel.ClaudeCode, "mcp__collab__channel_send"},
		{"codex", fakemodel.CodexCLI, "tool_search channel_send"},
	} {
		t.Run(tc.cli, func(t *testing.T) {
			t.Parallel()
			srv := fakemodel.Start(t)
			c := srv.CLI(t, tc.name)
			root := filepath.Join(t.TempDir(), "shared root")
			if err := os.MkdirAll(tree.Root(root).Channels(), 0o755); err != nil {
				t.Fatal(err)
			}
			agent := tc.cli
			startWatcher(t, root, agent, "dev", c.Env, "--channel", "ops",
				"--cli", tc.cli, "--cmd", c.Path, "--model", c.Model, "--workdir", c.Dir, "--timeout", "60s", "--mcp")
			env := map[string]string{"COLLAB_ROOT": root}

			srv.Next(fakemodel.MCPTool("collab", "channel_send", map[string]any{"message": "posted mid-task through MCP", "to": "human"}))
			// Then the default script answers "tool said: " and the result.
			id := strings.TrimSpace(runCollab(t, env, "", "send", "--agent", "human", "--channel", "ops", "--to", agent, "post something, then answer").stdout)
			var reply channel.Message
			waitFor(t, func() bool {
				r := replies(t, root, "ops", agent)[id]
				if len(r) == 0 {
					return false
				}
				var err error
				reply, err = channel.Lookup(tree.Root(root), "ops", r[0])
				return err == nil
			})

			var posted []channel.Message
			msgs, _, err := channel.ReadAll(tree.Root(root), "ops", channel.ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				if m.Metadata.Mode == "mcp" {
					posted = append(posted, m)
				}
			}
			if len(posted) != 1 {
				t.Fatalf("messages sent through MCP on ops: %+v; want one", posted)
			}
			m := posted[0]
			if m.From != agent || m.To != "human" || m.Content.Text != "posted mid-task through MCP" || m.Metadata.Hops != 1 {
				t.Errorf("sent through MCP: %+v; want from %s to human at hops 1", m, agent)
			}
			if dev, _, _ := channel.ReadAll(tree.Root(root), "dev", channel.ReaderOptions{}); len(dev) != 0 {
				t.Errorf("messages on dev: %+v; want none", dev)
			}
			if !strings.Contains(reply.Content.Text, "tool said:") || !strings.Contains(reply.Content.Text, m.ID) {
				t.Errorf("reply %q; want the model's words quoting the tool's result (id %s)", reply.Content.Text, m.ID)
			}
			reqs := srv.Requests()
			var calls []string
			for _, p := range reqs[len(reqs)-1].ToolCalls() {
				calls = append(calls, p.Tool)
			}
			if strings.Join(calls, " ") != tc.calls {
				t.Errorf("tool calls %q, want %q", calls, tc.calls)
			}
			j := waitJob(t, root, agent, id, jobs.Completed)
			sends := 0
			for _, ev := range j.Events {
				if ev.Kind == modelcli.EventToolCall && strings.Contains(ev.Tool, "channel_send") {
					sends++
				}
			}
			if sends != 1 {
				t.Errorf("job events %+v; want one channel_send tool call", j.Events)
			}

			// A message on the other channel: a new session, whose tools
			// act on dev.
			srv.Next(fakemodel.MCPTool("collab", "document_append", map[string]any{"content": "- from " + agent + "\n"}))
			second := strings.TrimSpace(runCollab(t, env, "", "send", "--agent", "human", "--channel", "dev", "--to", agent, "note it").stdout)
			waitFor(t, func() bool { return len(replies(t, root, "dev", agent)[second]) == 1 })
			data, err := os.ReadFile(filepath.Join(tree.Root(root).Docs("dev"), "notes.md"))
			if err != nil || string(data) != "- from "+agent+"\n" {
				t.Errorf("docs/dev/notes.md = %q, %v; want the appended line", data, err)
			}
			if _, err := os.Stat(tree.Root(root).Docs("ops")); err == nil {
				t.Error("docs/ops exists; the second run's tools acted on ops")
			}

			// Back on ops: the first session resumes, with the tools again.
			srv.Next(fakemodel.MCPTool("collab", "document_create", map[string]any{"file": "findings/x.md", "content": "x\n"}))
			third := strings.TrimSpace(runCollab(t, env, "", "send", "--agent", "human", "--channel", "ops", "--to", agent, "write it down").stdout)
			waitFor(t, func() bool { return len(replies(t, root, "ops", agent)[third]) == 1 })
			if j3 := waitJob(t, root, agent, third, jobs.Completed); !j3.Resumed || j3.Session != j.Session {
				t.Errorf("third job resumed=%v session %q; want a resume of %q", j3.Resumed, j3.Session, j.Session)
			}
			if data, err := os.ReadFile(filepath.Join(tree.Root(root).Docs("ops"), "findings", "x.md")); err != nil || string(data) != "x\n" {
				t.Errorf("docs/ops/findings/x.md = %q, %v", data, err)
			}
		})
	}
}
