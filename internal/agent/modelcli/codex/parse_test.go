package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/testsupport/clitest"
)

// Fixtures: ../testdata (clitest.Dir) holds the output of the real CLIs
// recorded against internal/testsupport/fakemodel (see its README); testdata holds two
// more of codex-cli 0.169.0's, recorded the same way: a model missing from
// Codex's catalogue (a warning item), and an API 401 with Codex's retries.

// expected decodes out for the values a parser should find: the thread,
// the last agent message and the usage.
func expected(t *testing.T, out []byte) (thread, text string, u usage) {
	t.Helper()
	for line := range bytes.Lines(out) {
		var r struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
			Item     struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"item"`
			Usage usage `json:"usage"`
		}
		if json.Unmarshal(line, &r) != nil {
			continue
		}
		switch {
		case r.Type == "thread.started":
			thread = r.ThreadID
		case r.Type == "item.completed" && r.Item.Type == "agent_message":
			text = r.Item.Text
		case r.Type == "turn.completed":
			u = r.Usage
		}
	}
	return thread, strings.TrimSpace(text), u
}

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file      string // in ../testdata, or testdata/NAME
		session   string
		wantErr   string
		wantIs    error
		wantKinds []string
	}{
		{file: "codex-exec.jsonl", wantKinds: []string{"started", "progress", "completed"}},
		{file: "codex-resume.jsonl", session: "01a2018f-7885-7541-a2b8-26c1330c0eb4", wantKinds: []string{"started", "progress", "completed"}},
		{file: "codex-tool.jsonl", wantKinds: []string{"started", "tool_call:command_execution", "progress", "completed"}},
		{file: "codex-tool-denied.jsonl", wantKinds: []string{"started", "progress", "completed"}},
		{
			file: "codex-error.jsonl", wantErr: "codex: We’re currently experiencing high demand",
			wantKinds: []string{"started", "progress", "error"},
		},
		{file: "codex-error-400.jsonl", wantErr: "codex: fake bad request", wantKinds: []string{"started", "progress", "error"}},
		{
			file: "codex-resume-missing.jsonl", session: "00000000-0000-7000-8000-000000000000",
			wantErr: "no rollout found for thread id", wantIs: modelcli.ErrSessionGone, wantKinds: []string{"error"},
		},
		{file: "codex-text.txt", wantIs: errNoResult, wantKinds: []string{"error", "error"}},
		{file: "testdata/model-warning.jsonl", wantKinds: []string{"started", "progress", "progress", "completed"}},
		{
			file:      "testdata/api-error-401.jsonl",
			wantErr:   "codex: unexpected status 401 Unauthorized: fake failure, url: http://127.0.0.1:18433/v1/responses",
			wantKinds: []string{"started", "progress", "progress", "progress", "progress", "progress", "progress", "progress", "error"},
		},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			var out, stderr []byte
			var exit int
			if strings.HasPrefix(tt.file, "testdata/") {
				out = clitest.ReadFile(t, tt.file) // standard output only
				if tt.wantErr != "" {
					exit = 1
				}
			} else {
				out, stderr, exit = clitest.Recorded(t, tt.file)
			}
			resp, err := clitest.Feed(&Parser{Session: tt.session}, "codex", out, stderr, exit)
			clitest.CheckErr(t, err, tt.wantIs, tt.wantErr)
			clitest.CheckResponse(t, resp, err)
			if got := clitest.Kinds(resp.Events); !slices.Equal(got, tt.wantKinds) {
				t.Errorf("events: got %v, want %v", got, tt.wantKinds)
			}
			thread, text, u := expected(t, out)
			if err != nil {
				text = ""
			}
			wantUsage := modelcli.Usage{Input: u.InputTokens - u.CachedInputTokens, CacheRead: u.CachedInputTokens,
				CacheWrite: u.CacheWriteTokens, Output: u.OutputTokens}
			if resp.Text != text || resp.Session != thread || resp.Usage != wantUsage || resp.CostUSD != 0 || resp.Question != nil {
				t.Errorf("got text %q, session %q, usage %+v, cost %v, question %v; want %q, %q, %+v, 0, none",
					resp.Text, resp.Session, resp.Usage, resp.CostUSD, resp.Question, text, thread, wantUsage)
			}
		})
	}
	// Every recorded codex fixture is in the table.
	for _, name := range clitest.RecordedOutputs(t, "codex") {
		if !covered[name] {
			t.Errorf("fixture %s is not in the table", name)
		}
	}
}

func TestParseEvents(t *testing.T) {
	out := strings.Join([]string{
		`{"type":"thread.started","thread_id":"t1"}`,
		`{"type":"turn.started"}`,
		`{"type":"item.completed","item":{"id":"r","type":"reasoning","text":"thinking hard"}}`,
		`{"type":"item.started","item":{"id":"f","type":"file_change","changes":[{"path":"a.go","kind":"update"},{"path":"b.go","kind":"add"}],"status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"f","type":"file_change","changes":[{"path":"a.go","kind":"update"}],"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"m","type":"mcp_tool_call","server":"collab","tool":"send","arguments":{},"status":"completed"}}`,
		`{"type":"item.started","item":{"id":"w","type":"web_search","query":"go 1.26"}}`,
		`{"type":"item.started","item":{"id":"c","type":"collab_agent_tool_call","tool":"spawn"}}`,
		`{"type":"item.updated","item":{"id":"todo","type":"todo_list","items":[]}}`,
		`{"type":"item.completed","item":{"id":"a1","type":"agent_message","text":"first"}}`,
		`{"type":"item.completed","item":{"id":"a2","type":"agent_message","text":"the answer"}}`,
		`{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":60,"cache_write_input_tokens":5,"output_tokens":7,"reasoning_output_tokens":3}}`,
	}, "\n")
	resp, err := Parse([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "the answer" {
		t.Errorf("text: got %q, want the last message", resp.Text)
	}
	want := []modelcli.Event{
		{Kind: "started", Text: "t1"},
		{Kind: "tool_call", Tool: "file_change", Text: "update a.go, add b.go"},
		{Kind: "tool_call", Tool: "mcp__collab__send"},
		{Kind: "tool_call", Tool: "web_search", Text: "go 1.26"},
		{Kind: "tool_call", Tool: "collab_agent_tool_call"},
		{Kind: "progress", Text: "first"},
		{Kind: "progress", Text: "the answer"},
		{Kind: "completed", Text: "the answer"},
	}
	same := func(a, b modelcli.Event) bool { return a.Kind == b.Kind && a.Tool == b.Tool && a.Text == b.Text }
	if !slices.EqualFunc(resp.Events, want, same) {
		t.Errorf("events:\ngot  %+v\nwant %+v", resp.Events, want)
	}
	if u := (modelcli.Usage{Input: 40, CacheRead: 60, CacheWrite: 5, Output: 7}); resp.Usage != u {
		t.Errorf("usage: got %+v, want %+v", resp.Usage, u)
	}
}

func TestParseEdges(t *testing.T) {
	completed := `{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}` + "\n"
	message := func(s string) string {
		return `{"type":"item.completed","item":{"id":"x","type":"agent_message","text":` + strings.TrimSpace(mustJSON(s)) + "}}\n"
	}
	exit1 := &proc.ExitError{Name: "codex", Code: 1}
	stopped := &proc.ExitError{Name: "codex", Code: -1, Cause: context.Canceled}
	tests := []struct {
		name     string
		out      string
		session  string
		runErr   error
		stderr   string
		wantText string
		wantErr  error
		wantMsg  string
	}{
		{name: "empty output", wantErr: errNoResult},
		{name: "no agent message", out: completed, wantErr: modelcli.ErrEmpty},
		{name: "answer", out: message(" hi \n") + completed, wantText: "hi"},
		{name: "answer despite exit 1", out: message("hi") + completed, runErr: exit1, wantText: "hi"},
		{name: "killed after the answer", out: message("hi") + completed, runErr: stopped, wantErr: context.Canceled},
		{
			name: "error line, then exit 1", out: `{"type":"error","message":"quota exceeded"}`, runErr: exit1,
			wantErr: clitest.ErrAny, wantMsg: "codex: quota exceeded (exit status 1)",
		},
		{
			name: "stderr error with backtrace", runErr: exit1,
			stderr:  "WARNING: odd\nError: bad config: model_provider\n\nStack backtrace:\n   0: <unknown>\n",
			wantErr: clitest.ErrAny, wantMsg: "codex: bad config: model_provider (exit status 1)",
		},
		{
			name: "stderr without Error:", runErr: exit1, stderr: "thread 'main' panicked\n   1: <unknown>\n",
			wantErr: clitest.ErrAny, wantMsg: "codex: thread 'main' panicked (exit status 1)",
		},
		{name: "plain text, exit 0", out: "something odd\n", wantErr: errNoResult, wantMsg: "something odd"},
		{
			name: "turn.failed without a message", out: `{"type":"turn.failed"}`, runErr: exit1,
			wantErr: clitest.ErrAny, wantMsg: "codex: turn failed",
		},
		{name: "long answer cut", out: message(strings.Repeat("é", 100)) + completed, wantText: strings.Repeat("é", 48) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Parser{Session: tt.session, MaxText: 100}
			for line := range strings.Lines(tt.out) {
				p.Line([]byte(line))
			}
			resp, err := p.Finish(tt.runErr, []byte(tt.stderr))
			clitest.CheckErr(t, err, tt.wantErr, tt.wantMsg)
			if resp.Text != tt.wantText {
				t.Errorf("text: got %q, want %q", resp.Text, tt.wantText)
			}
			if tt.wantText != "" && tt.wantText != "hi" && !resp.Truncated {
				t.Error("a cut answer: want Truncated")
			}
		})
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestRunUsage(t *testing.T) {
	a := &Adapter{}
	u := func(in, out int64) modelcli.Usage { return modelcli.Usage{Input: in, Output: out} }
	steps := []struct {
		resumed, thread string
		total, want     modelcli.Usage
	}{
		{"", "t1", u(10, 4), u(10, 4)},
		{"t1", "t1", u(20, 8), u(10, 4)},  // known: the difference
		{"t1", "t1", u(31, 12), u(11, 4)}, // and again
		{"t2", "t2", u(50, 5), u(50, 5)},  // unknown thread: its total
		{"t1", "t9", u(3, 1), u(3, 1)},    // a different thread came back: its own
	}
	for i, s := range steps {
		if got := a.runUsage(s.resumed, s.thread, s.total); got != s.want {
			t.Errorf("step %d: got %+v, want %+v", i, got, s.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	clitest.AddSeeds(f, filepath.Join(clitest.Dir, "codex-*"), filepath.Join("testdata", "*.jsonl"))
	f.Add([]byte(`{"type":"item.started","item":{"type":"file_change","changes":"x"}}`))
	f.Add([]byte(`{"type":"turn.failed","error":{"message":"{\"error\":{\"message\":\"m\"}}"}}`))
	f.Fuzz(func(t *testing.T, out []byte) {
		resp, err := Parse(out)
		clitest.CheckResponse(t, resp, err)
	})
}

func BenchmarkParse(b *testing.B) {
	out := clitest.ReadFile(b, filepath.Join(clitest.Dir, "codex-tool.jsonl"))
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		if _, err := Parse(out); err != nil {
			b.Fatal(err)
		}
	}
}
