package fakemodel_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// Request bodies shaped like each CLI's, offering each CLI's shell tool.
var bodies = map[fakemodel.API]struct{ path, body string }{
	fakemodel.Anthropic: {"/v1/messages?beta=true", `{"model":"claude-x","stream":true,
		"system":[{"type":"text","text":"be brief"}],
		"tools":[{"name":"Bash","input_schema":{}},{"name":"Read","input_schema":{}}],
		"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>\ncontext\n</system-reminder>"},{"type":"text","text":"hi there\nsecond"}]}]}`},
	fakemodel.OpenAI: {"/v1/responses", `{"model":"gpt-x","stream":true,"instructions":"be brief",
		"tools":[{"type":"function","name":"exec_command"},{"type":"namespace","name":"multi","tools":[{"name":"spawn"}]}],
		"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/x</cwd>\n</environment_context>"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"hi there\nsecond"}]}]}`},
	fakemodel.Gemini: {"/v1beta/models/gemini-x:streamGenerateContent?alt=sse", `{
		"systemInstruction":{"parts":[{"text":"be brief"}]},
		"tools":[{"functionDeclarations":[{"name":"read_file"},{"name":"run_shell_command"}]}],
		"contents":[{"role":"user","parts":[{"text":"<session_context>\nctx\n</session_context>"},{"text":"hi there\nsecond"}]}]}`},
}

// sse is one server-sent event.
type sse struct {
	name string
	data map[string]any
}

func post(t *testing.T, s *fakemodel.Server, path, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readSSE(t *testing.T, r io.Reader) []sse {
	t.Helper()
	var evs []sse
	var cur sse
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != nil {
				evs = append(evs, cur)
			}
			cur = sse{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("event data %q: %v", line, err)
			}
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// streamed is what a client makes of a stream: the text, a tool call, and
// whether the stream ended the way the API ends one.
type streamed struct {
	text, tool, args string
	done             bool
}

func decodeStream(t *testing.T, api fakemodel.API, evs []sse) streamed {
	t.Helper()
	var out streamed
	for _, ev := range evs {
		d := ev.data
		switch api {
		case fakemodel.Anthropic:
			if ev.name != d["type"] {
				t.Errorf("event %q carries type %v", ev.name, d["type"])
			}
			switch d["type"] {
			case "content_block_start":
				if b := d["content_block"].(map[string]any); b["type"] == "tool_use" {
					out.tool = b["name"].(string)
				}
			case "content_block_delta":
				delta := d["delta"].(map[string]any)
				if s, ok := delta["text"].(string); ok {
					out.text += s
				}
				if s, ok := delta["partial_json"].(string); ok {
					out.args += s
				}
			case "message_stop":
				out.done = true
			}
		case fakemodel.OpenAI:
			switch d["type"] {
			case "response.output_text.delta":
				out.text += d["delta"].(string)
			case "response.output_item.done":
				if item := d["item"].(map[string]any); item["type"] == "function_call" {
					out.tool, out.args = item["name"].(string), item["arguments"].(string)
				}
			case "response.completed":
				out.done = true
			}
		case fakemodel.Gemini:
			cand := d["candidates"].([]any)[0].(map[string]any)
			for _, p := range cand["content"].(map[string]any)["parts"].([]any) {
				part := p.(map[string]any)
				if s, ok := part["text"].(string); ok {
					out.text += s
				}
				if fc, ok := part["functionCall"].(map[string]any); ok {
					out.tool = fc["name"].(string)
					b, _ := json.Marshal(fc["args"])
					out.args = string(b)
				}
			}
			out.done = cand["finishReason"] == "STOP"
		}
	}
	return out
}

func TestStreams(t *testing.T) {
	shellArgs := map[fakemodel.API]string{
		fakemodel.Anthropic: `{"command":"echo hi","description":"Run echo hi"}`,
		fakemodel.OpenAI:    `{"cmd":"echo hi"}`,
		fakemodel.Gemini:    `{"command":"echo hi","description":"Run echo hi"}`,
	}
	shellTool := map[fakemodel.API]string{fakemodel.Anthropic: "Bash", fakemodel.OpenAI: "exec_command", fakemodel.Gemini: "run_shell_command"}
	readTool := map[fakemodel.API]string{fakemodel.Anthropic: "Read", fakemodel.OpenAI: "exec_command", fakemodel.Gemini: "read_file"}
	for api, b := range bodies {
		t.Run(string(api), func(t *testing.T) {
			t.Parallel()
			cases := []struct {
				name  string
				reply *fakemodel.Reply
				want  streamed
			}{
				{"echo", nil, streamed{text: "echo: hi there", done: true}},
				{"text", ptr(fakemodel.Text("one two  three")), streamed{text: "one two  three", done: true}},
				{"empty", ptr(fakemodel.Text("")), streamed{done: true}},
				{"shell", ptr(fakemodel.Shell("echo hi")), streamed{tool: shellTool[api], args: shellArgs[api], done: true}},
				{"slow", ptr(fakemodel.Text("a b c").Slowly(time.Millisecond).After(time.Millisecond)), streamed{text: "a b c", done: true}},
			}
			for _, tc := range cases {
				s := fakemodel.Start(t)
				if tc.reply != nil {
					s.Next(*tc.reply)
				}
				resp := post(t, s, b.path, b.body)
				if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
					t.Fatalf("%s: %s %s", tc.name, resp.Status, resp.Header.Get("Content-Type"))
				}
				if got := decodeStream(t, api, readSSE(t, resp.Body)); got != tc.want {
					t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
				}
			}
			s := fakemodel.Start(t)
			s.Next(fakemodel.ReadFile("/etc/hostname"))
			got := decodeStream(t, api, readSSE(t, post(t, s, b.path, b.body).Body))
			if got.tool != readTool[api] || !strings.Contains(got.args, "/etc/hostname") {
				t.Errorf("ReadFile: got %+v, want a %s call", got, readTool[api])
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestNonStreaming(t *testing.T) {
	s := fakemodel.Start(t)
	var msg struct {
		Content []struct{ Type, Text string } `json:"content"`
		Stop    string                        `json:"stop_reason"`
	}
	decodeJSON(t, post(t, s, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"plain string"}]}`), &msg)
	if len(msg.Content) != 1 || msg.Content[0].Text != "echo: plain string" || msg.Stop != "end_turn" {
		t.Errorf("anthropic: %+v", msg)
	}
	var resp struct {
		Status string `json:"status"`
		Output []struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"output"`
	}
	decodeJSON(t, post(t, s, "/v1/responses", `{"model":"m","input":"a string input"}`), &resp)
	if resp.Status != "completed" || len(resp.Output) != 1 || resp.Output[0].Content[0].Text != "echo: a string input" {
		t.Errorf("openai: %+v", resp)
	}
	var gen struct {
		Candidates []struct {
			Content struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	decodeJSON(t, post(t, s, "/v1beta/models/g:generateContent", `{"contents":[{"role":"user","parts":[{"text":"summarise"}]}]}`), &gen)
	if len(gen.Candidates) != 1 || gen.Candidates[0].Content.Parts[0].Text != "echo: summarise" || gen.Candidates[0].FinishReason != "STOP" {
		t.Errorf("gemini: %+v", gen)
	}
	var count struct {
		Total int `json:"totalTokens"`
	}
	decodeJSON(t, post(t, s, "/v1beta/models/g:countTokens", `{"contents":[]}`), &count)
	if count.Total <= 0 {
		t.Errorf("countTokens: %+v", count)
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("%d turns, want 3 (countTokens is not one)", n)
	}
}

func decodeJSON(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: %s", resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		api    fakemodel.API
		status int
		want   string // the body, with the message "boom"
	}{
		{fakemodel.Anthropic, 500, `{"error":{"message":"boom","type":"api_error"},"request_id":"req_fake","type":"error"}`},
		{fakemodel.Anthropic, 529, `{"error":{"message":"boom","type":"overloaded_error"},"request_id":"req_fake","type":"error"}`},
		{fakemodel.Anthropic, 400, `{"error":{"message":"boom","type":"invalid_request_error"},"request_id":"req_fake","type":"error"}`},
		{fakemodel.OpenAI, 500, `{"error":{"code":null,"message":"boom","param":null,"type":"server_error"}}`},
		{fakemodel.OpenAI, 429, `{"error":{"code":"rate_limit_exceeded","message":"boom","param":null,"type":"rate_limit_error"}}`},
		{fakemodel.Gemini, 500, `{"error":{"code":500,"message":"boom","status":"INTERNAL"}}`},
		{fakemodel.Gemini, 400, `{"error":{"code":400,"message":"boom","status":"INVALID_ARGUMENT"}}`},
		{fakemodel.Gemini, 429, `{"error":{"code":429,"message":"boom","status":"RESOURCE_EXHAUSTED"}}`},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s-%d", tc.api, tc.status), func(t *testing.T) {
			s := fakemodel.Start(t)
			s.Always(fakemodel.Error(tc.status, "boom"))
			resp := post(t, s, bodies[tc.api].path, bodies[tc.api].body)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || strings.TrimSpace(string(b)) != tc.want {
				t.Errorf("got %d %s, want %d %s", resp.StatusCode, b, tc.status, tc.want)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

func TestDecode(t *testing.T) {
	// One tool round in each API's words: the call, then its result.
	rounds := map[fakemodel.API]struct{ path, body string }{
		fakemodel.Anthropic: {"/v1/messages", `{"model":"m","stream":true,"messages":[
			{"role":"user","content":"run it"},
			{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a.txt\nb.txt"}],"is_error":true}]}]}`},
		fakemodel.OpenAI: {"/v1/responses", `{"model":"m","stream":true,"input":[
			{"type":"message","role":"user","content":[{"type":"input_text","text":"run it"}]},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]},
			{"type":"reasoning","summary":[]},
			{"type":"function_call","name":"Bash","arguments":"{\"command\":\"ls\"}","call_id":"t1"},
			{"type":"function_call_output","call_id":"t1","output":"a.txt\nb.txt"}]}`},
		fakemodel.Gemini: {"/v1beta/models/m:streamGenerateContent?alt=sse", `{"contents":[
			{"role":"user","parts":[{"text":"run it"}]},
			{"role":"model","parts":[{"text":"ok"},{"functionCall":{"id":"t1","name":"Bash","args":{"command":"ls"}}}]},
			{"role":"user","parts":[{"functionResponse":{"id":"t1","name":"Bash","response":{"output":"a.txt\nb.txt"}}}]}]}`},
	}
	for api, r := range rounds {
		t.Run(string(api), func(t *testing.T) {
			s := fakemodel.Start(t)
			resp := post(t, s, r.path, r.body, "X-Api-Key", "secret1", "Authorization", "Bearer secret2", "X-Goog-Api-Key", "secret3")
			if got := decodeStream(t, api, readSSE(t, resp.Body)); got.text != "tool said: a.txt" {
				t.Errorf("reply %q, want the tool's first line", got.text)
			}
			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			req := reqs[0]
			if req.API != api || req.Model != "m" || !req.Stream || !req.Turn || req.Seq != 1 {
				t.Errorf("request %+v", req)
			}
			if got := req.Prompt(); got != "run it" {
				t.Errorf("Prompt() = %q", got)
			}
			res, ok := req.ToolResult()
			if !ok || res.Text != "a.txt\nb.txt" || res.ID != "t1" || res.IsError != (api == fakemodel.Anthropic) {
				t.Errorf("ToolResult() = %+v, %v", res, ok)
			}
			calls := req.ToolCalls()
			if len(calls) != 1 || calls[0].Tool != "Bash" || calls[0].ID != "t1" || !jsonEqual(calls[0].Args, `{"command":"ls"}`) {
				t.Errorf("ToolCalls() = %+v", calls)
			}
			for _, want := range []string{"user: run it\n", "assistant: ok\n", `assistant: call Bash {"command":"ls"}` + "\n", "result a.txt\nb.txt\n"} {
				if !strings.Contains(req.Transcript(), want) {
					t.Errorf("Transcript() lacks %q:\n%s", want, req.Transcript())
				}
			}
			b, _ := json.Marshal(req.Header)
			if strings.Contains(string(b), "secret") {
				t.Errorf("a secret was recorded: %s", b)
			}
			if req.Header.Get("X-Api-Key") != "[redacted]" {
				t.Errorf("X-Api-Key %q, want [redacted]", req.Header.Get("X-Api-Key"))
			}
		})
	}
}

func jsonEqual(a []byte, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

func TestSystemToolsAndContext(t *testing.T) {
	for api, b := range bodies {
		s := fakemodel.Start(t)
		readSSE(t, post(t, s, b.path, b.body).Body)
		req := s.Requests()[0]
		if req.System != "be brief" {
			t.Errorf("%s: System %q", api, req.System)
		}
		if got := req.Prompt(); got != "hi there\nsecond" {
			t.Errorf("%s: Prompt() %q, want the context block left out", api, got)
		}
		if len(req.Tools) < 2 {
			t.Errorf("%s: Tools %v", api, req.Tools)
		}
	}
	s := fakemodel.Start(t)
	readSSE(t, post(t, s, bodies[fakemodel.OpenAI].path, bodies[fakemodel.OpenAI].body).Body)
	if got := strings.Join(s.Requests()[0].Tools, ","); got != "exec_command,spawn" {
		t.Errorf("OpenAI tools %q, want namespaces flattened", got)
	}
}

// TestMCPTool: MCPTool calls an MCP server's tool the way each CLI offers
// it; Codex's comes back with its namespace, which Codex needs to route it.
func TestMCPTool(t *testing.T) {
	args := map[string]any{"message": "hi"}
	for _, tt := range []struct {
		name, path, body string
		api              fakemodel.API
		wantTool         string
		wantNamespace    string
	}{
		{"claude", "/v1/messages", `{"model":"m","stream":true,"tools":[{"name":"Bash"},{"name":"mcp__collab__channel_send"}],
			"messages":[{"role":"user","content":"go"}]}`, fakemodel.Anthropic, "mcp__collab__channel_send", ""},
		{"codex", "/v1/responses", `{"model":"m","stream":true,"tools":[{"type":"function","name":"channel_send"},
			{"type":"namespace","name":"mcp__collab","tools":[{"type":"function","name":"who"},{"type":"function","name":"channel_send"}]}],
			"input":"go"}`, fakemodel.OpenAI, "channel_send", "mcp__collab"},
		{"gemini", "/v1beta/models/g:streamGenerateContent?alt=sse", `{"tools":[{"functionDeclarations":[{"name":"channel_send"}]}],
			"contents":[{"role":"user","parts":[{"text":"go"}]}]}`, fakemodel.Gemini, "channel_send", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := fakemodel.Start(t)
			s.Next(fakemodel.MCPTool("collab", "channel_send", args))
			evs := readSSE(t, post(t, s, tt.path, tt.body).Body)
			got := decodeStream(t, tt.api, evs)
			if got.tool != tt.wantTool || got.args != `{"message":"hi"}` || !got.done {
				t.Errorf("call %+v, want %s with the arguments", got, tt.wantTool)
			}
			if tt.api == fakemodel.OpenAI {
				ns := ""
				for _, ev := range evs {
					if item, ok := ev.data["item"].(map[string]any); ok && ev.data["type"] == "response.output_item.done" {
						ns, _ = item["namespace"].(string)
					}
				}
				if ns != tt.wantNamespace {
					t.Errorf("namespace %q, want %q", ns, tt.wantNamespace)
				}
				if got := s.Requests()[0].Namespaces["mcp__collab"]; strings.Join(got, ",") != "who,channel_send" {
					t.Errorf("Namespaces = %v", s.Requests()[0].Namespaces)
				}
			}
		})
	}
	// Codex with the tools deferred: first a search, then, once the search's
	// result offers the namespace, the call.
	s := fakemodel.Start(t)
	s.Next(fakemodel.MCPTool("collab", "channel_send", args), fakemodel.Text("after"))
	evs := readSSE(t, post(t, s, "/v1/responses", `{"model":"m","stream":true,"tools":[{"type":"tool_search","execution":"client"}],"input":"go"}`).Body)
	var search map[string]any
	for _, ev := range evs {
		if ev.data["type"] == "response.output_item.done" {
			search = ev.data["item"].(map[string]any)
		}
	}
	if search["type"] != "tool_search_call" || search["execution"] != "client" || search["arguments"].(map[string]any)["query"] != "channel_send" {
		t.Fatalf("first reply %v, want a client tool_search_call for channel_send", search)
	}
	followUp := `{"model":"m","stream":true,"tools":[{"type":"tool_search","execution":"client"}],"input":[
		{"type":"message","role":"user","content":"go"},
		{"type":"tool_search_call","call_id":"` + search["call_id"].(string) + `","execution":"client","arguments":{"query":"channel_send"}},
		{"type":"tool_search_output","call_id":"` + search["call_id"].(string) + `","execution":"client","status":"completed",
		 "tools":[{"type":"namespace","name":"mcp__collab","tools":[{"type":"function","name":"channel_send"}]}]}]}`
	evs = readSSE(t, post(t, s, "/v1/responses", followUp).Body)
	if got := decodeStream(t, fakemodel.OpenAI, evs); got.tool != "channel_send" || got.args != `{"message":"hi"}` {
		t.Errorf("after the search: %+v, want the call", got)
	}
	req := s.Requests()[1]
	if res, ok := req.ToolResult(); !ok || res.Text != "mcp__collab.channel_send" || !req.HasTool("channel_send") {
		t.Errorf("follow-up request: result %+v, tools %v", res, req.Tools)
	}
	if got := decodeStream(t, fakemodel.OpenAI, readSSE(t, post(t, s, "/v1/responses", followUp).Body)); got.text != "after" {
		t.Errorf("third reply %+v, want the next queued one", got)
	}

	// Offered nowhere: a text that says so.
	s = fakemodel.Start(t)
	s.Next(fakemodel.MCPTool("collab", "who", nil))
	var msg struct {
		Content []struct{ Text string } `json:"content"`
	}
	decodeJSON(t, post(t, s, "/v1/messages", `{"model":"m","tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"q"}]}`), &msg)
	if len(msg.Content) != 1 || !strings.Contains(msg.Content[0].Text, "no MCP tool who") {
		t.Errorf("reply %+v, want a text naming the missing tool", msg)
	}
}

func TestScriptOrder(t *testing.T) {
	s := fakemodel.Start(t)
	ask := func() string {
		t.Helper()
		var msg struct {
			Content []struct{ Text string } `json:"content"`
		}
		decodeJSON(t, post(t, s, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"q"}]}`), &msg)
		return msg.Content[0].Text
	}
	s.Next(fakemodel.Text("first"), fakemodel.Text("second"))
	s.Script(func(r fakemodel.Request) fakemodel.Reply { return fakemodel.Text(fmt.Sprintf("script %d", r.Seq)) })
	var got []string
	for range 4 {
		got = append(got, ask())
	}
	s.Script(nil)
	got = append(got, ask())
	s.Always(fakemodel.Text("always"))
	s.Next(fakemodel.Text("queued"))
	got = append(got, ask(), ask())
	want := "first|second|script 3|script 4|echo: q|queued|always"
	if strings.Join(got, "|") != want {
		t.Errorf("got %q, want %q", strings.Join(got, "|"), want)
	}
}

func TestProbesAndUnknownPaths(t *testing.T) {
	s := fakemodel.Start(t)
	req, _ := http.NewRequest(http.MethodHead, s.URL()+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD /: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp := post(t, s, "/v2/whatever?key=secret4", `{}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %s", resp.Status)
	}
	all := s.AllRequests()
	if len(all) != 2 || len(s.Requests()) != 0 {
		t.Fatalf("AllRequests %d, Requests %d; want 2 and 0", len(all), len(s.Requests()))
	}
	if all[0].Method != http.MethodHead || all[1].Path != "/v2/whatever" || strings.Contains(all[1].Query, "secret") {
		t.Errorf("recorded %+v / %+v", all[0], all[1])
	}
}

func TestHungReplyEndsOnClose(t *testing.T) {
	s := fakemodel.Start(nil)
	s.Always(fakemodel.Text("partial answer").Hung())
	resp := post(t, s, bodies[fakemodel.Gemini].path, bodies[fakemodel.Gemini].body)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The first chunk arrives; then nothing, until the server closes.
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, "partial") {
		t.Fatalf("first chunk %q, %v", line, err)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with a hung reply open")
	}
}

func TestHungReplyEndsWhenClientGoes(t *testing.T) {
	s := fakemodel.Start(t)
	s.Always(fakemodel.Text("x").Hung())
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+bodies[fakemodel.OpenAI].path, strings.NewReader(bodies[fakemodel.OpenAI].body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	// A second request is still answered: the hung handler did not wedge the server.
	s.Next(fakemodel.Text("fine"))
	if got := decodeStream(t, fakemodel.OpenAI, readSSE(t, post(t, s, bodies[fakemodel.OpenAI].path, bodies[fakemodel.OpenAI].body).Body)); got.text != "fine" {
		t.Errorf("got %+v", got)
	}
}

func TestAfter(t *testing.T) {
	s := fakemodel.Start(t)
	s.Next(fakemodel.Text("late").After(200 * time.Millisecond))
	start := time.Now()
	readSSE(t, post(t, s, bodies[fakemodel.Anthropic].path, bodies[fakemodel.Anthropic].body).Body)
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("answered after %v, want at least 200ms", d)
	}
}

func TestConcurrent(t *testing.T) {
	s := fakemodel.Start(t)
	const n = 30
	for i := range n {
		s.Next(fakemodel.Text(fmt.Sprintf("reply-%02d", i)))
	}
	apis := []fakemodel.API{fakemodel.Anthropic, fakemodel.OpenAI, fakemodel.Gemini}
	bodiesOut := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			b := bodies[apis[i%3]]
			resp, err := http.Post(s.URL()+b.path, "application/json", strings.NewReader(b.body))
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			bodiesOut[i], errs[i] = io.ReadAll(resp.Body)
			_ = s.AllRequests()
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.WaitRequests(ctx, n); err != nil {
		t.Error(err)
	}
	wg.Wait()
	got := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		got[decodeStream(t, apis[i%3], readSSE(t, bytes.NewReader(bodiesOut[i]))).text] = true
	}
	if len(got) != n {
		t.Errorf("%d distinct replies, want %d: %v", len(got), n, got)
	}
	seqs := map[int]bool{}
	for _, r := range s.Requests() {
		seqs[r.Seq] = true
	}
	if len(seqs) != n {
		t.Errorf("%d distinct Seq, want %d", len(seqs), n)
	}
}

func TestOutputLine(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain", "hello\nworld", "hello"},
		{"codex", "Chunk ID: ab12\nWall time: 0.0 seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nhello\n", "hello"},
		{"gemini shell", "<untrusted_context>\nOutput: hello\nProcess Group PGID: 12\n</untrusted_context>", "hello"},
		{"claude read", "     1\thello\n     2\tworld\n", "hello"},
		{"blank first", "\n\n  hello  \n", "hello"},
		{"empty", "", ""},
		{"empty output", "Output:", ""},
	}
	for _, tc := range cases {
		if got := fakemodel.OutputLine(tc.in); got != tc.want {
			t.Errorf("%s: OutputLine(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestPrompt(t *testing.T) {
	msg := func(role string, texts ...string) fakemodel.Message {
		m := fakemodel.Message{Role: role}
		for _, s := range texts {
			m.Parts = append(m.Parts, fakemodel.Part{Kind: fakemodel.PartText, Text: s})
		}
		return m
	}
	cases := []struct {
		name string
		msgs []fakemodel.Message
		want string
	}{
		{"none", nil, ""},
		{"last user", []fakemodel.Message{msg("user", "a"), msg("assistant", "b"), msg("user", "c")}, "c"},
		{"context only skipped", []fakemodel.Message{msg("user", "a"), msg("user", "<environment_context>\n<cwd>/</cwd>\n</environment_context>")}, "a"},
		{"tag with attributes", []fakemodel.Message{msg("user", `<ctx kind="x">y</ctx>`, "q")}, "q"},
		{"unclosed tag is text", []fakemodel.Message{msg("user", "<b>bold</i>")}, "<b>bold</i>"},
		{"joined", []fakemodel.Message{msg("user", "x", "y")}, "x\ny"},
	}
	for _, tc := range cases {
		if got := (fakemodel.Request{Messages: tc.msgs}).Prompt(); got != tc.want {
			t.Errorf("%s: Prompt() = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestModelTime(t *testing.T) {
	s := fakemodel.Start(t)
	s.Next(fakemodel.Text("late").After(100 * time.Millisecond))
	before := time.Now()
	readSSE(t, post(t, s, bodies[fakemodel.Anthropic].path, bodies[fakemodel.Anthropic].body).Body)
	after := time.Now()
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Arrived.Before(before) || r.Ended.After(after) || r.Ended.IsZero() {
		t.Errorf("arrived %v, ended %v: not within the call's %v to %v", r.Arrived, r.Ended, before, after)
	}
	if d := r.Ended.Sub(r.Arrived); d < 100*time.Millisecond {
		t.Errorf("model time %v, want at least the reply's 100ms delay", d)
	}
}

// TestWaitQuiet: WaitQuiet returns once every call is answered and none
// came for the quiet time; a call still being answered keeps it waiting.
func TestWaitQuiet(t *testing.T) {
	s := fakemodel.Start(t)
	decodeJSON(t, post(t, s, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`), &struct{}{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitQuiet(ctx, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	s.Next(fakemodel.Text("never ends").Hung())
	go http.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if _, err := s.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if err := s.WaitQuiet(short, 50*time.Millisecond); err == nil {
		t.Error("WaitQuiet returned while a call was still being answered")
	}
}
