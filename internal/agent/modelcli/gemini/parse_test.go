package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/testsupport/clitest"
)

// The fixtures are in ../testdata (clitest.Dir): the output of the real
// CLIs recorded against internal/testsupport/fakemodel (see its README).

// expected decodes out for the values a parser should find: the session,
// the assistant's text after the last tool, and the usage.
func expected(t *testing.T, out []byte) (session, text string, u modelcli.Usage) {
	t.Helper()
	var b strings.Builder
	model := ""
	for line := range bytes.Lines(out) {
		var r record
		if json.Unmarshal(line, &r) != nil {
			continue
		}
		switch r.Type {
		case "init":
			session, model = r.SessionID, r.Model
		case "message":
			if r.Role == "assistant" {
				b.WriteString(r.Content)
			}
		case "tool_use", "tool_result":
			b.Reset()
		case "result":
			if s := r.Stats; s != nil {
				u = modelcli.Usage{Input: s.InputTokens - s.Cached, Output: s.OutputTokens, CacheRead: s.Cached, Model: model}
			}
		}
	}
	return session, strings.TrimSpace(b.String()), u
}

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file      string
		session   string
		wantErr   string
		wantIs    error
		wantKinds []string
	}{
		{file: "gemini-stream.jsonl", wantKinds: []string{"started", "progress", "completed"}},
		{file: "gemini-resume-stream.jsonl", session: "09f07261-6c16-42a8-ade9-1856461796d5", wantKinds: []string{"started", "progress", "completed"}},
		{file: "gemini-tool-stream.jsonl", wantKinds: []string{"started", "tool_call:read_file", "progress", "completed"}},
		{file: "gemini-shell-stream.jsonl", wantKinds: []string{"started", "tool_call:run_shell_command", "progress", "completed"}},
		{file: "gemini-shell-denied-stream.jsonl", wantKinds: []string{"started", "tool_call:run_shell_command", "progress", "completed"}},
		{file: "gemini-error-stream.jsonl", wantErr: "gemini: fake bad request (HTTP 400 INVALID_ARGUMENT)", wantKinds: []string{"started", "error"}},
		{file: "gemini-error.json", wantErr: "gemini: fake overload (HTTP 500 INTERNAL) (exit status 244)", wantKinds: []string{"error"}},
		{
			file: "gemini-resume-missing.json", session: "00000000-0000-4000-8000-000000000000",
			wantErr: `Error resuming session: Invalid session identifier "00000000-0000-4000-8000-000000000000".`,
			wantIs:  modelcli.ErrSessionGone, wantKinds: []string{"error"},
		},
		{file: "gemini-json.json", wantIs: errNoResult, wantKinds: slices.Repeat([]string{"error"}, 58+1)}, // each line is a stray one
		{file: "gemini-text.txt", wantIs: errNoResult, wantKinds: []string{"error", "error"}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			out, stderr, exit := clitest.Recorded(t, tt.file)
			resp, err := clitest.Feed(&Parser{Session: tt.session}, "gemini", out, stderr, exit)
			clitest.CheckErr(t, err, tt.wantIs, tt.wantErr)
			clitest.CheckResponse(t, resp, err)
			if got := clitest.Kinds(resp.Events); !slices.Equal(got, tt.wantKinds) {
				t.Errorf("events: got %v, want %v", got, tt.wantKinds)
			}
			session, text, u := expected(t, out)
			if err != nil {
				text = ""
			}
			if resp.Text != text || resp.Session != session || resp.Usage != u || resp.CostUSD != 0 || resp.Question != nil {
				t.Errorf("got text %q, session %q, usage %+v, cost %v, question %v; want %q, %q, %+v, 0, none",
					resp.Text, resp.Session, resp.Usage, resp.CostUSD, resp.Question, text, session, u)
			}
		})
	}
	// Every recorded gemini fixture is in the table.
	for _, name := range clitest.RecordedOutputs(t, "gemini") {
		if !covered[name] {
			t.Errorf("fixture %s is not in the table", name)
		}
	}
}

// TestParseChunks: text chunks become one progress event per stretch,
// timed at its last chunk; the reply is the text after the last tool.
func TestParseChunks(t *testing.T) {
	lines := []string{
		`{"type":"init","session_id":"s1","model":"m"}`,
		`{"type":"message","role":"user","content":"do it"}`,
		`{"type":"message","role":"assistant","content":"Let me ","delta":true}`,
		`{"type":"message","role":"assistant","content":"look.","delta":true}`,
		`{"type":"tool_use","tool_name":"glob","tool_id":"g1","parameters":{"pattern":"*.go"}}`,
		`{"type":"tool_result","tool_id":"g1","status":"success","output":"a.go"}`,
		`{"type":"error","severity":"warning","message":"loop detected"}`,
		`{"type":"message","role":"assistant","content":"Found ","delta":true}`,
		`{"type":"message","role":"assistant","content":"a.go.","delta":true}`,
		`{"type":"result","status":"success","stats":{"input_tokens":100,"output_tokens":9,"cached":30,"input":70}}`,
	}
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tick := func(n int) time.Time { return clock.Add(time.Duration(n) * time.Second) }
	i := 0
	p := Parser{Now: func() time.Time { i++; return tick(i) }}
	for _, l := range lines {
		p.Line([]byte(l))
	}
	resp, err := p.Finish(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Found a.go." {
		t.Errorf("text: got %q, want the text after the tool", resp.Text)
	}
	want := []modelcli.Event{
		{Time: tick(1), Kind: "started", Text: "s1"},
		{Time: tick(4), Kind: "progress", Text: "Let me look."},
		{Time: tick(5), Kind: "tool_call", Tool: "glob", Text: "*.go"},
		{Time: tick(7), Kind: "progress", Text: "[gemini] loop detected"},
		{Time: tick(9), Kind: "progress", Text: "Found a.go."},
		{Time: tick(11), Kind: "completed", Text: "Found a.go."},
	}
	same := func(a, b modelcli.Event) bool {
		return a.Kind == b.Kind && a.Tool == b.Tool && a.Text == b.Text && a.Time.Equal(b.Time)
	}
	if !slices.EqualFunc(resp.Events, want, same) {
		t.Errorf("events:\ngot  %v\nwant %v", resp.Events, want)
	}
	if u := (modelcli.Usage{Input: 70, Output: 9, CacheRead: 30, Model: "m"}); resp.Usage != u {
		t.Errorf("usage: got %+v, want %+v", resp.Usage, u)
	}
}

func TestParseEdges(t *testing.T) {
	result := `{"type":"result","status":"success","stats":{"input_tokens":1,"output_tokens":1}}` + "\n"
	chunk := func(s string) string {
		b, _ := json.Marshal(s)
		return `{"type":"message","role":"assistant","content":` + string(b) + `,"delta":true}` + "\n"
	}
	exit1 := &proc.ExitError{Name: "gemini", Code: 1}
	stopped := &proc.ExitError{Name: "gemini", Code: 0, Cause: context.Canceled}
	tests := []struct {
		name      string
		out       string
		session   string
		runErr    error
		stderr    string
		wantText  string
		wantErr   error
		wantMsg   string
		wantTrunc bool
	}{
		{name: "empty output", wantErr: errNoResult},
		{name: "no text", out: result, wantErr: modelcli.ErrEmpty},
		{name: "text only before a tool", out: chunk("Let me see.") + `{"type":"tool_use","tool_name":"ls"}` + "\n" + result, wantErr: modelcli.ErrEmpty},
		{name: "answer", out: chunk(" hi ") + chunk("there\n") + result, wantText: "hi there"},
		{name: "killed (exit 0)", out: chunk("hi") + result, runErr: stopped, wantErr: context.Canceled},
		{name: "SIGTERM'd by someone else: no result", out: chunk("hi"), wantErr: errNoResult},
		{name: "result error without a message", out: `{"type":"result","status":"error"}`, runErr: exit1, wantErr: clitest.ErrAny, wantMsg: "gemini: status error"},
		{
			name: "result error, not an API body", out: `{"type":"result","status":"error","error":{"type":"x","message":"loop"}}`,
			runErr: exit1, wantErr: clitest.ErrAny, wantMsg: "gemini: loop",
		},
		{
			name: "untrusted folder", runErr: &proc.ExitError{Name: "gemini", Code: 55},
			stderr:  "Gemini CLI is not running in a trusted directory. To proceed, …\n",
			wantErr: clitest.ErrAny, wantMsg: "gemini: Gemini CLI is not running in a trusted directory. To proceed, … (exit status 55)",
		},
		{
			name: "resume refused without a resume asked", runErr: &proc.ExitError{Name: "gemini", Code: 42},
			stderr:  "Error resuming session: No previous sessions found for this project.\n",
			wantErr: clitest.ErrAny, wantMsg: "gemini: Error resuming session: No previous sessions found for this project. (exit status 42)",
		},
		{
			name: "resume refused", session: "latest", runErr: &proc.ExitError{Name: "gemini", Code: 42},
			stderr: "Warning: 256-color support not detected.\nError resuming session: No previous sessions found for this project.\n", wantErr: modelcli.ErrSessionGone,
		},
		{name: "long answer cut", out: chunk(strings.Repeat("é", 40)) + chunk(strings.Repeat("é", 40)) + result, wantText: strings.Repeat("é", 48) + "…", wantTrunc: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Parser{Session: tt.session, MaxText: 100}
			for line := range strings.Lines(tt.out) {
				p.Line([]byte(line))
			}
			resp, err := p.Finish(tt.runErr, []byte(tt.stderr))
			clitest.CheckErr(t, err, tt.wantErr, tt.wantMsg)
			if resp.Text != tt.wantText || resp.Truncated != tt.wantTrunc {
				t.Errorf("text: got %q (truncated %v), want %q (%v)", resp.Text, resp.Truncated, tt.wantText, tt.wantTrunc)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	clitest.AddSeeds(f, filepath.Join(clitest.Dir, "gemini-*"))
	f.Add([]byte(`{"type":"result","status":"error","error":{"message":"[API Error: {\"error\":{\"code\":1}}]"}}`))
	f.Fuzz(func(t *testing.T, out []byte) {
		resp, err := Parse(out)
		clitest.CheckResponse(t, resp, err)
	})
}

func BenchmarkParse(b *testing.B) {
	out := clitest.ReadFile(b, filepath.Join(clitest.Dir, "gemini-tool-stream.jsonl"))
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		if _, err := Parse(out); err != nil {
			b.Fatal(err)
		}
	}
}
