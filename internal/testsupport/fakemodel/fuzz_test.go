package fakemodel

import (
	"strings"
	"testing"
)

// FuzzDecode feeds arbitrary bodies to the three request decoders and the
// helpers that read a decoded request: none may panic.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"model":"m","stream":true,"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"tool_result","tool_use_id":"t","content":"out"}]}]}`))
	f.Add([]byte(`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}],"tools":[{"type":"namespace","tools":[{"name":"a"}]}]}`))
	f.Add([]byte(`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}},{"functionResponse":{"name":"f","response":{"output":"o"}}}]}]}`))
	f.Add([]byte(`{"model":"m","tools":[{"type":"tool_search"}],"input":[{"type":"tool_search_call","call_id":"c","arguments":{"query":"q"}},{"type":"tool_search_output","call_id":"c","tools":[{"type":"namespace","name":"mcp__s","tools":[{"name":"t"}]},{"type":"function","name":"f"}]},{"type":"function_call","name":"t","arguments":"{}"}]}`))
	f.Add([]byte(`{"input":"just text"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, decode := range []func(*Request) error{decodeAnthropic, decodeOpenAI, func(r *Request) error { return decodeGemini(r, "m") }} {
			r := Request{Body: body}
			if decode(&r) != nil {
				continue
			}
			_ = r.Prompt()
			_ = r.Transcript()
			_ = r.ToolCalls()
			if res, ok := r.ToolResult(); ok {
				_ = OutputLine(res.Text)
			}
			rep := Echo(r)
			if rep.Status != 0 || rep.Call != nil {
				t.Fatalf("Echo answered %+v", rep)
			}
			_ = Shell("x").resolve(r)
			_ = ReadFile("x").resolve(r)
			_ = MCPTool("s", "t", nil).resolve(r)
		}
	})
}

// FuzzOutputLine checks that OutputLine returns one line.
func FuzzOutputLine(f *testing.F) {
	f.Add("Chunk ID: 1\nOutput:\nhello\n")
	f.Add("<untrusted_context>\nOutput: x\n</untrusted_context>")
	f.Add("     1\tline")
	f.Fuzz(func(t *testing.T, s string) {
		if got := OutputLine(s); strings.Contains(got, "\n") {
			t.Fatalf("OutputLine(%q) = %q, more than one line", s, got)
		}
	})
}
