package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// TestRemoteWatchMCP: `collab watch --remote --mcp` with the real claude
// CLI on a host whose --root does not exist, its key given as --key: the
// model calls channel_send
// mid-task, and its message lands on the mount through the bridge, from
// the agent, signed and verified there, one hop deeper; then the model's
// final words, quoting the tool's result, are the reply.
func TestRemoteWatchMCP(t *testing.T) {
	srv := fakemodel.Start(t)
	c := srv.CLI(t, fakemodel.ClaudeCode)
	s := newRemoteWatchSetup(t, "claude")
	state := filepath.Join(t.TempDir(), "state")
	// The key as a flag, not a variable: the MCP server gets it from the
	// watcher all the same.
	s.startRemote(t, "claude", state, append(c.Env, "COLLAB_KEY="),
		"--key", s.keys["claude"], "--cli", "claude", "--cmd", c.Path, "--model", c.Model, "--workdir", c.Dir, "--timeout", "60s", "--mcp")

	srv.Next(fakemodel.MCPTool("collab", "channel_send", map[string]any{"message": "posted mid-task from afar", "to": "human"}))
	id := strings.TrimSpace(runCollab(t, map[string]string{"COLLAB_ROOT": string(s.mount)}, "",
		"send", "--agent", "human", "--channel", "dev", "--to", "claude", "post something, then answer").stdout)
	var reply channel.Message
	waitFor(t, func() bool {
		r := s.repliesOnMount(t, "claude")[id]
		if len(r) == 0 {
			return false
		}
		var err error
		reply, err = channel.Lookup(s.mount, "dev", r[0])
		return err == nil
	})
	var posted []channel.Message
	for _, m := range channelFiles(t, s.mount, "dev") {
		if m.Metadata.Mode == channel.ModeMCP {
			posted = append(posted, m)
		}
	}
	if len(posted) != 1 {
		t.Fatalf("messages sent through MCP on the mount: %+v; want one", posted)
	}
	m := posted[0]
	if m.From != "claude" || m.To != "human" || m.Content.Text != "posted mid-task from afar" || m.Metadata.Hops != 1 {
		t.Errorf("sent through MCP: %+v; want from claude to human at hops 1", m)
	}
	v := signing.NewVerifier(keyring.Open(tree.Root(s.backing).Keys()))
	if got := m.Verify(v, "dev"); got != signing.Verified {
		t.Errorf("the MCP post's signature on the mount: %s", got)
	}
	if !strings.Contains(reply.Content.Text, "tool said:") || !strings.Contains(reply.Content.Text, m.ID) {
		t.Errorf("reply %q; want the model's words quoting the tool's result (id %s)", reply.Content.Text, m.ID)
	}
}
