package mcpserver

import (
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestChannelSendToInstanceAgent: channel_send takes NAME@INSTANCE, as
// collab send and the page do; the file's to is the agent's id.
func TestChannelSendToInstanceAgent(t *testing.T) {
	root := tree.Root(t.TempDir())
	_, cs := connect(t, root)
	var sent SendResult
	if e := call(t, cs, "channel_send", map[string]any{"message": "please review", "to": "reviewer@pr-1"}, &sent); e != "" {
		t.Fatal(e)
	}
	m, err := channel.Lookup(root, "dev", sent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.To != "reviewer--pr-1" {
		t.Errorf("to = %q, want reviewer--pr-1", m.To)
	}
}
