package mcpserver

import (
	"context"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// TestChannelSendInReplyTo: channel_send's in_reply_to threads the
// message as the answer, and a bad id is refused.
func TestChannelSendInReplyTo(t *testing.T) {
	root := tree.Root(t.TempDir())
	_, cs := connect(t, root)
	q := channel.Message{SessionID: "dev", From: "bob", To: "ana", Content: channel.Content{Text: "ping"}}
	if err := (&channel.Writer{Root: root}).Post(&q); err != nil {
		t.Fatal(err)
	}
	var sent SendResult
	if e := call(t, cs, "channel_send", map[string]any{"message": "pong", "to": "bob", "in_reply_to": q.ID}, &sent); e != "" {
		t.Fatal(e)
	}
	m, err := channel.Lookup(root, "dev", sent.ID)
	if err != nil || m.Metadata.InReplyTo != q.ID || m.ThreadID() != q.ID {
		t.Fatalf("reply %+v (%v), want in reply to %s", m.Metadata, err, q.ID)
	}
	if e := call(t, cs, "channel_send", map[string]any{"message": "x", "in_reply_to": "../etc"}, &sent); !strings.Contains(e, "not a message id") {
		t.Errorf("bad in_reply_to: %q, want refused", e)
	}
}

// TestToolErrorsCarryTheirKind: a tool that fails answers a tool error
// the model reads, with the layer's kind of the failure in _meta; the
// arguments a tool's schema refuses are the SDK's invalid params error.
func TestToolErrorsCarryTheirKind(t *testing.T) {
	root := tree.Root(t.TempDir())
	_, cs := connect(t, root)
	ctx := context.Background()
	for _, tc := range []struct {
		tool string
		args map[string]any
		kind string
		text string
	}{
		{"channel_send", map[string]any{"message": " "}, "invalid", "empty"},
		{"message_status", map[string]any{"id": "msg-20200101-000000-x-abcd"}, "not found", ""},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		if err != nil || !res.IsError {
			t.Errorf("%s(%v): %+v %v; want a tool error", tc.tool, tc.args, res, err)
			continue
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if res.Meta[KindKey] != tc.kind || !strings.Contains(text, tc.text) {
			t.Errorf("%s(%v): kind %v, text %q; want kind %q and %q in the text", tc.tool, tc.args, res.Meta[KindKey], text, tc.kind, tc.text)
		}
	}
}
