package mcpserver

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// TestInvalidArgumentsAreInvalidParams: a tool's arguments the service
// refuses as invalid are a JSON-RPC invalid params error; a refusal of
// another kind stays a tool error the model reads.
func TestInvalidArgumentsAreInvalidParams(t *testing.T) {
	root := tree.Root(t.TempDir())
	_, cs := connect(t, root)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "channel_send", Arguments: map[string]any{"message": " "}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, "empty") {
		t.Errorf("channel_send of a blank message: %v; want invalid params saying it is empty", err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "message_status", Arguments: map[string]any{"id": "msg-20200101-000000-x-abcd"}})
	if err != nil || !res.IsError {
		t.Errorf("message_status of a missing message: %+v %v; want a tool error", res, err)
	}
}
