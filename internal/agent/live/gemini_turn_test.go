package live

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/jsonrpc"
	"github.com/collabdev/collab/internal/testsupport/clitest"
)

func TestGeminiTurn(t *testing.T) {
	up := func(u string) json.RawMessage { return json.RawMessage(`{"sessionId":"s","update":` + u + `}`) }
	chunk := func(s string) json.RawMessage {
		return up(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"` + s + `"}}`)
	}
	ok := &jsonrpc.Msg{ID: json.RawMessage("1"), Result: json.RawMessage(`{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":10,"output_tokens":3},"model_usage":[{"model":"gemini-2.5-flash","token_count":{}}]}}}`)}
	for _, tc := range []struct {
		name      string
		updates   []json.RawMessage
		resp      *jsonrpc.Msg
		runErr    error
		wantText  string
		wantKinds []string
		wantErr   string
	}{
		{"text", []json.RawMessage{chunk("Hel"), chunk("lo")}, ok, nil, "Hello", []string{"progress", "completed"}, ""},
		{"tool", []json.RawMessage{
			chunk("Let me look."),
			up(`{"sessionUpdate":"tool_call","toolCallId":"read_file__x_1","status":"in_progress","title":"note.txt","content":[],"kind":"read"}`),
			up(`{"sessionUpdate":"tool_call_update","toolCallId":"read_file__x_1","status":"completed","content":[]}`),
			up(`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hmm"}}`),
			up(`{"sessionUpdate":"plan","entries":[{"content":"read it","status":"completed","priority":"high"}]}`),
			chunk("Done."),
		}, ok, nil, "Done.", []string{"progress", "tool_call:read_file", "progress", "progress", "completed"}, ""},
		{"empty", nil, ok, nil, "", []string{"error"}, modelcli.ErrEmpty.Error()},
		{"cancelled", []json.RawMessage{chunk("x")}, &jsonrpc.Msg{ID: json.RawMessage("1"), Result: json.RawMessage(`{"stopReason":"cancelled"}`)}, nil, "", []string{"progress", "error"}, "cancelled"},
		{"max tokens", nil, &jsonrpc.Msg{ID: json.RawMessage("1"), Result: json.RawMessage(`{"stopReason":"max_tokens"}`)}, nil, "", []string{"error"}, "the turn ended: max_tokens"},
		{"agent error", nil, &jsonrpc.Msg{ID: json.RawMessage("1"), Error: &jsonrpc.Error{Code: 429, Message: "Rate limit exceeded. Try again later."}}, nil, "", []string{"error"}, "Rate limit exceeded. Try again later. (code 429)"},
		{"died", []json.RawMessage{chunk("part")}, nil, ErrDied, "", []string{"progress", "error"}, ErrDied.Error()},
		{"not an update", []json.RawMessage{json.RawMessage(`[1]`), chunk("ok")}, ok, nil, "ok", []string{"progress", "completed"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &geminiTurn{}
			for _, u := range tc.updates {
				g.update(u, time.Now())
			}
			resp, err := g.finish(tc.resp, tc.runErr)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("got error %v, want %q", err, tc.wantErr)
			}
			if resp.Text != tc.wantText {
				t.Errorf("text %q, want %q", resp.Text, tc.wantText)
			}
			if got := clitest.Kinds(resp.Events); !slices.Equal(got, tc.wantKinds) {
				t.Errorf("events %v, want %v", got, tc.wantKinds)
			}
			clitest.CheckResponse(t, resp, err)
			if tc.name == "text" && (resp.Usage != modelcli.Usage{Input: 10, Output: 3, Model: "gemini-2.5-flash"}) {
				t.Errorf("usage %+v", resp.Usage)
			}
			if tc.name == "cancelled" && !errors.Is(err, errStopped) {
				t.Errorf("got %v, want errStopped", err)
			}
		})
	}
}

func TestGeminiTurnCapsReply(t *testing.T) {
	g := &geminiTurn{maxText: 8}
	g.update(json.RawMessage(`{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"0123456789abc"}}}`), time.Now())
	resp, err := g.finish(&jsonrpc.Msg{ID: json.RawMessage("1"), Result: json.RawMessage(`{"stopReason":"end_turn"}`)}, nil)
	if err != nil || !resp.Truncated || len(resp.Text) > 8 {
		t.Fatalf("got %q (truncated %v), %v; want at most 8 bytes, truncated", resp.Text, resp.Truncated, err)
	}
}
