package live

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/plumbing/jsonrpc"
)

func TestDecodeRPC(t *testing.T) {
	for _, tc := range []struct {
		name, line     string
		ok, req, resp  bool
		method, result string
	}{
		{name: "response", line: `{"id":3,"result":{"a":1}}`, ok: true, resp: true, result: `{"a":1}`},
		{name: "error", line: `{"id":"x","error":{"code":-32600,"message":"no"}}`, ok: true, resp: true},
		{name: "request", line: `{"id":0,"method":"item/fileChange/requestApproval","params":{}}`, ok: true, req: true, method: "item/fileChange/requestApproval"},
		{name: "notification", line: `{"method":"turn/started","params":{}}`, ok: true, method: "turn/started"},
		{name: "null id", line: `{"id":null,"method":"warning"}`, ok: true, method: "warning"},
		{name: "neither", line: `{"params":{}}`},
		{name: "not json", line: `Reading prompt from stdin...`},
		{name: "array", line: `[1]`},
		{name: "empty", line: ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _, err := jsonrpc.Decode([]byte(tc.line))
			if (err == nil) != tc.ok {
				t.Fatalf("err %v, want ok %v", err, tc.ok)
			}
			if m.IsRequest() != tc.req || m.IsResponse() != tc.resp || m.Method != tc.method || string(m.Result) != tc.result {
				t.Errorf("got %+v", m)
			}
		})
	}
}

// FuzzDecodeRPC: a decoded message is exactly one of request, response
// and notification, and its id is usable as a key.
func FuzzDecodeCodexRPC(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"result":{"thread":{"id":"t"}}}`,
		`{"id":2,"method":"item/commandExecution/requestApproval","params":{"command":"ls"}}`,
		`{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"i","text":"hi"},"threadId":"t","turnId":"u"}}`,
		`{"method":"turn/completed","params":{"threadId":"t","turn":{"id":"u","status":"failed","error":{"message":"x"}}}}`,
		`{"id":null}`, `{}`, `null`, ` {"id": "a b"} `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, _, err := jsonrpc.Decode(b)
		if err != nil {
			return
		}
		kinds := 0
		for _, k := range []bool{m.IsRequest(), m.IsResponse(), m.Method != "" && m.ID == nil} {
			if k {
				kinds++
			}
		}
		if kinds != 1 {
			t.Fatalf("%q: %d kinds", b, kinds)
		}
		if m.ID != nil && jsonrpc.IDKey(m.ID) == "" {
			t.Fatalf("%q: empty id key", b)
		}
		var n appNote
		if json.Unmarshal(m.Params, &n) == nil {
			execLine(m.Method, n, tokenUsage{}) // must not panic
		}
	})
}

// TestExecLines: a turn's notifications, through execLine, make the
// events and response of codex exec's output.
func TestExecLines(t *testing.T) {
	notes := []string{
		`{"method":"item/started","params":{"item":{"type":"commandExecution","id":"c1","command":"ls -la","status":"inProgress"},"threadId":"t","turnId":"u"}}`,
		`{"method":"item/completed","params":{"item":{"type":"commandExecution","id":"c1","command":"ls -la","status":"completed"},"threadId":"t","turnId":"u"}}`,
		`{"method":"item/completed","params":{"item":{"type":"fileChange","id":"f1","changes":[{"path":"a.txt","kind":{"type":"add"},"diff":""}],"status":"completed"},"threadId":"t","turnId":"u"}}`,
		`{"method":"item/completed","params":{"item":{"type":"reasoning","id":"r","summary":[],"content":[]},"threadId":"t","turnId":"u"}}`,
		`{"method":"error","params":{"error":{"message":"retrying"},"willRetry":true,"threadId":"t","turnId":"u"}}`,
		`{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"m","text":"done"},"threadId":"t","turnId":"u"}}`,
		`{"method":"turn/completed","params":{"threadId":"t","turn":{"id":"u","status":"completed","error":null}}}`,
	}
	p := &codex.Parser{Model: "m1"}
	var kinds []string
	for _, l := range notes {
		m, _, err := jsonrpc.Decode([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		var n appNote
		if err := json.Unmarshal(m.Params, &n); err != nil {
			t.Fatal(err)
		}
		if line := execLine(m.Method, n, tokenUsage{Input: 10, CachedIn: 4, Output: 3}); line != nil {
			for _, e := range p.Line(line) {
				kinds = append(kinds, e.Kind+":"+e.Tool+":"+e.Text)
			}
		}
	}
	resp, err := p.Finish(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "tool_call:command_execution:ls -la|tool_call:file_change:add a.txt|progress::done"
	if got := strings.Join(kinds, "|"); got != want {
		t.Errorf("events %s, want %s", got, want)
	}
	if resp.Text != "done" || resp.Usage != (modelcli.Usage{Input: 6, CacheRead: 4, Output: 3, Model: "m1"}) {
		t.Errorf("got %q, usage %+v", resp.Text, resp.Usage)
	}

	failed := execLine("turn/completed", appNote{Turn: &appTurn{ID: "u", Status: "interrupted"}}, tokenUsage{})
	p = &codex.Parser{}
	p.Line(failed)
	if _, err := p.Finish(nil, nil); err == nil || !strings.Contains(err.Error(), "turn interrupted") {
		t.Errorf("an interrupted turn: %v", err)
	}
}

// TestCodexDeclinesRequests: the server's requests are answered at once,
// approvals declined, and the turn told.
func TestCodexDeclinesRequests(t *testing.T) {
	for _, tc := range []struct{ method, want string }{
		{"item/commandExecution/requestApproval", `{"id":7,"result":{"decision":"decline"}}`},
		{"item/fileChange/requestApproval", `{"id":7,"result":{"decision":"decline"}}`},
		{"mcpServer/elicitation/request", `{"id":7,"result":{"_meta":null,"action":"decline","content":null}}`},
		{"item/tool/requestUserInput", `{"id":7,"result":{"answers":{}}}`},
		{"item/tool/call", `{"error":{"code":-32601,"message":"collab: item/tool/call is not supported"},"id":7}`},
	} {
		t.Run(tc.method, func(t *testing.T) {
			var in bytes.Buffer
			s := &codexSession{process: process{in: nopCloser{&in}}, notes: make(chan jsonrpc.Msg, 1), pending: map[string]chan jsonrpc.Msg{}}
			s.dispatch([]byte(`{"id":7,"method":"` + tc.method + `","params":{}}`))
			if got := strings.TrimSpace(in.String()); got != tc.want {
				t.Errorf("answered %s, want %s", got, tc.want)
			}
			if m := <-s.notes; m.Method != tc.method {
				t.Errorf("the turn was told %q", m.Method)
			}
		})
	}
}

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }
