// Package mcptest calls MCP tools in tests through the official SDK's
// client, the way a model CLI does.
package mcptest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HangGuard bounds one call: a call that does not return is a failure, not
// a latency check.
const HangGuard = time.Minute

// Call calls tool name with args and decodes its structured result into
// out (when not nil). A tool error is returned as "error: " and its text
// (a model sees it, the test checks it); success is "". A protocol error
// fails the test.
func Call(tb testing.TB, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), HangGuard)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		tb.Fatalf("%s(%v): protocol error %v", name, args, err)
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return "error: " + strings.Join(text, " ")
	}
	if out != nil {
		data, err := json.Marshal(res.StructuredContent)
		if err != nil {
			tb.Fatal(err)
		}
		if err := json.Unmarshal(data, out); err != nil {
			tb.Fatalf("%s: result %s: %v", name, data, err)
		}
	}
	return ""
}
