package claude

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

// Fixtures: ../testdata (clitest.Dir) holds the output of the real CLIs
// recorded against internal/testsupport/fakemodel (see its README); testdata holds a
// few more of Claude Code 2.1.197's, recorded the same way: API retries
// before an error, a Bash call denied in dontAsk mode, the turn limit and
// an unknown session in stream-json.

// lastResult decodes the result line of out, for the expected values.
func lastResult(t *testing.T, out []byte) (r struct {
	SessionID    string  `json:"session_id"`
	Result       string  `json:"result"`
	TotalCostUSD float64 `json:"total_cost_usd"`
	Usage        usage   `json:"usage"`
}) {
	t.Helper()
	for line := range bytes.Lines(out) {
		if bytes.Contains(line, []byte(`"type":"result"`)) {
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r
}

func TestParseFixtures(t *testing.T) {
	tests := []struct {
		file      string // in ../testdata, or testdata/NAME
		session   string // Parser.Session: the run resumed this
		wantErr   string // substring of the error; "" for success
		wantIs    error
		wantKinds []string
		wantQ     string // substring of the question
	}{
		{file: "claude-stream.jsonl", wantKinds: []string{"started", "progress", "completed"}},
		{file: "claude-partial-stream.jsonl", wantKinds: []string{"started", "progress", "completed"}},
		{file: "claude-resume-stream.jsonl", session: "b06b855c-0219-4225-a2f7-efaf6294ed78", wantKinds: []string{"started", "progress", "completed"}},
		{file: "claude-tool-stream.jsonl", wantKinds: []string{"started", "tool_call:Bash", "progress", "completed"}},
		{
			file: "claude-tool-denied-stream.jsonl", wantQ: "Write(/tmp/fixture/work/denied.txt)",
			wantKinds: []string{"started", "tool_call:Write", "progress", "needs_input", "completed"},
		},
		{file: "claude-error-stream.jsonl", wantErr: "claude: API Error: 400 fake bad request", wantKinds: []string{"started", "error"}},
		{file: "claude-json.json", wantKinds: []string{"completed"}},
		{file: "claude-max-turns.json", wantErr: "claude: error_max_turns: Reached maximum number of turns (1)", wantKinds: []string{"error"}},
		{file: "claude-error.json", wantErr: "claude: API Error: 500 fake overload.", wantKinds: []string{"error"}},
		{
			file: "claude-resume-missing.json", session: "00000000-0000-4000-8000-000000000000",
			wantErr: "No conversation found", wantIs: modelcli.ErrSessionGone, wantKinds: []string{"error"},
		},
		{file: "claude-text.txt", wantErr: "claude: no result in the output: echo: Say hello.", wantIs: errNoResult, wantKinds: []string{"error", "error"}},
		{
			file: "testdata/denied.jsonl", wantQ: "Bash(echo hi > /tmp/exp/shellran)",
			wantKinds: []string{"started", "tool_call:Bash", "progress", "needs_input", "completed"},
		},
		{
			file: "testdata/max-turns.jsonl", wantErr: "claude: error_max_turns: Reached maximum number of turns (1)",
			wantKinds: []string{"started", "tool_call:Bash", "error"},
		},
		{
			file: "testdata/api-error-401.jsonl", wantErr: "claude: Failed to authenticate. API Error: 401 fake failure",
			wantKinds: []string{"started", "progress", "error"},
		},
		{
			file: "testdata/session-gone.jsonl", session: "0f0e7a57-0000-4000-8000-000000000000",
			wantErr: "No conversation found", wantIs: modelcli.ErrSessionGone, wantKinds: []string{"error"},
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
			resp, err := clitest.Feed(&Parser{Session: tt.session}, "claude", out, stderr, exit)
			clitest.CheckErr(t, err, tt.wantIs, tt.wantErr)
			clitest.CheckResponse(t, resp, err)
			if got := clitest.Kinds(resp.Events); !slices.Equal(got, tt.wantKinds) {
				t.Errorf("events: got %v, want %v", got, tt.wantKinds)
			}
			want := lastResult(t, out)
			wantText := strings.TrimSpace(want.Result)
			if err != nil {
				wantText = ""
			}
			u := modelcli.Usage{Input: want.Usage.InputTokens, Output: want.Usage.OutputTokens,
				CacheRead: want.Usage.CacheReadInputTokens, CacheWrite: want.Usage.CacheCreationInputTokens}
			if resp.Text != wantText || resp.Session != want.SessionID || resp.CostUSD != want.TotalCostUSD || resp.Usage != u {
				t.Errorf("got text %q, session %q, cost %v, usage %+v; want %q, %q, %v, %+v",
					resp.Text, resp.Session, resp.CostUSD, resp.Usage, wantText, want.SessionID, want.TotalCostUSD, u)
			}
			switch {
			case tt.wantQ == "" && resp.Question != nil:
				t.Errorf("question: got %+v, want none", resp.Question)
			case tt.wantQ != "" && (resp.Question == nil || !strings.Contains(resp.Question.Text, tt.wantQ) ||
				!slices.Equal(resp.Question.Options, []string{"allow", "deny"})):
				t.Errorf("question: got %+v, want one naming %q with options allow, deny", resp.Question, tt.wantQ)
			}
		})
	}
	// Every recorded claude fixture is in the table.
	for _, name := range clitest.RecordedOutputs(t, "claude") {
		if !covered[name] {
			t.Errorf("fixture %s is not in the table", name)
		}
	}
}

func TestParseEdges(t *testing.T) {
	result := func(fields string) string {
		return `{"type":"result","subtype":"success","is_error":false,"session_id":"s1"` + fields + "}\n"
	}
	exit1 := &proc.ExitError{Name: "claude", Code: 1, StderrTail: []byte("boom\n")}
	stopped := &proc.ExitError{Name: "claude", Code: -1, Cause: context.Canceled}
	tests := []struct {
		name     string
		out      string
		session  string
		runErr   error
		stderr   string
		wantText string
		wantErr  error // matched with errors.Is (clitest.ErrAny: any); nil: success
		wantMsg  string
	}{
		{name: "empty output", wantErr: errNoResult},
		{name: "plain text", out: "Error: something odd\n", wantErr: errNoResult, wantMsg: "something odd"},
		{name: "empty result", out: result(`,"result":"  "`), wantErr: modelcli.ErrEmpty},
		{name: "result", out: result(`,"result":" hi \n"`), wantText: "hi"},
		{name: "success despite exit 1", out: result(`,"result":"hi"`), runErr: exit1, wantText: "hi"},
		{name: "exit 1, no result", runErr: exit1, wantErr: exit1, wantMsg: "exit status 1"},
		{name: "killed after a result", out: result(`,"result":"hi"`), runErr: stopped, wantErr: context.Canceled},
		{
			name: "resume refused on stderr", session: "x", runErr: exit1,
			stderr: "No conversation found with session ID: x\n", wantErr: modelcli.ErrSessionGone,
		},
		{
			name: "not a session id", session: "nope", runErr: exit1,
			stderr:  "Error: --resume requires a valid session ID or session title when used with --print.",
			wantErr: modelcli.ErrSessionGone,
		},
		{
			name: "missing session text without a resume", runErr: exit1,
			stderr: "No conversation found with session ID: x\n", wantErr: exit1,
		},
		{
			name: "error result without text", out: `{"type":"result","subtype":"error_during_execution","is_error":true,"errors":[{"odd":1}]}`,
			runErr: exit1, wantErr: clitest.ErrAny, wantMsg: `claude: error_during_execution: {"odd":1}`,
		},
		{
			name: "error result, nothing said", out: `{"type":"result","subtype":"error_during_execution","is_error":true}`,
			runErr: exit1, wantErr: exit1, wantMsg: "claude: error_during_execution: claude: exit status 1",
		},
		{name: "long result cut", out: result(`,"result":"` + strings.Repeat("é", 100) + `"`), wantText: strings.Repeat("é", 48) + "…"},
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
			last := resp.Events[len(resp.Events)-1]
			if want := map[bool]string{true: modelcli.EventError, false: modelcli.EventCompleted}[err != nil]; last.Kind != want {
				t.Errorf("last event: got %s, want %s", last.Kind, want)
			}
		})
	}
}

func TestQuestion(t *testing.T) {
	ds := []denial{
		{ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"git push","description":"Push"}`)},
		{ToolName: "Read", ToolInput: json.RawMessage(`{"file_path":"/etc/hostname"}`)},
		{ToolName: "Bash", ToolInput: json.RawMessage(`{"command":"git push","description":"again"}`)},
		{ToolName: "mcp__collab__send", ToolInput: json.RawMessage(`{}`)},
	}
	q := question(ds)
	want := "Claude Code was denied permission for Bash(git push), Read(/etc/hostname), mcp__collab__send. Allow (for the run that resumes the session) or deny?"
	if q == nil || q.Text != want {
		t.Fatalf("got %+v, want text %q", q, want)
	}
	if wantAllow := []string{"Bash(git push)", "Read(//etc/hostname)", "mcp__collab__send"}; !slices.Equal(q.Allow, wantAllow) {
		t.Errorf("allow %q, want %q", q.Allow, wantAllow)
	}
	if !slices.Equal(q.Options, []string{modelcli.AllowOption, "deny"}) {
		t.Errorf("options %q", q.Options)
	}
	if question(nil) != nil {
		t.Error("no denials: want no question")
	}
}

// TestRule: the rule that allows a denied call allows that call, unclipped,
// in the form Claude Code's --allowedTools matches.
func TestRule(t *testing.T) {
	long := strings.Repeat("x", 600)
	for _, tt := range []struct {
		name, tool, input, want string
	}{
		{"bash", "Bash", `{"command":"python3 -c 'print(1)'","description":"Run"}`, "Bash(python3 -c 'print(1)')"},
		{"bash, long", "Bash", `{"command":"echo ` + long + `"}`, "Bash(echo " + long + ")"},
		{"read, absolute", "Read", `{"file_path":"/etc/hostname"}`, "Read(//etc/hostname)"},
		{"write, relative", "Write", `{"file_path":"out/a.txt","content":"x"}`, "Edit(out/a.txt)"},
		{"edit, absolute", "Edit", `{"file_path":"/srv/a.go","old_string":"x"}`, "Edit(//srv/a.go)"},
		{"notebook", "NotebookEdit", `{"notebook_path":"/w/n.ipynb"}`, "Edit(//w/n.ipynb)"},
		{"web fetch", "WebFetch", `{"url":"https://example.com:8443/a?b","prompt":"p"}`, "WebFetch(domain:example.com)"},
		{"web fetch, no url", "WebFetch", `{"prompt":"p"}`, ""},
		{"mcp tool", "mcp__collab__send", `{"message":"hi"}`, "mcp__collab__send"},
		{"bash without a command", "Bash", `[1]`, ""},
		{"read without a path", "Read", `{}`, ""},
		{"write without a path", "Write", `{"content":"x"}`, ""},
		{"no tool", "", `{}`, ""},
		{"odd tool name", "Bash(rm -rf /)", `{}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := rule(denial{ToolName: tt.tool, ToolInput: json.RawMessage(tt.input)}); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEventTimes: events carry the time their line was parsed.
func TestEventTimes(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := Parser{Now: func() time.Time { clock = clock.Add(time.Second); return clock }}
	var times []time.Time
	for line := range bytes.Lines(clitest.ReadFile(t, filepath.Join(clitest.Dir, "claude-tool-stream.jsonl"))) {
		for _, e := range p.Line(line) {
			times = append(times, e.Time)
		}
	}
	resp, _ := p.Finish(nil, nil)
	times = append(times, resp.Events[len(resp.Events)-1].Time)
	// init, assistant (tool), user (none), assistant (text), result; then Finish.
	want := []time.Time{clock.Add(-5 * time.Second), clock.Add(-4 * time.Second), clock.Add(-2 * time.Second), clock}
	if !slices.Equal(times, want) {
		t.Errorf("got %v, want %v", times, want)
	}
}

func FuzzParse(f *testing.F) {
	clitest.AddSeeds(f, filepath.Join(clitest.Dir, "claude-*"), filepath.Join("testdata", "*.jsonl"))
	f.Add([]byte(`{"type":"assistant","message":{"content":"text"}}`))
	f.Add([]byte(`{"type":"result","permission_denials":[{"tool_name":"Bash","tool_input":[1]}],"result":"x"}`))
	f.Fuzz(func(t *testing.T, out []byte) {
		resp, err := Parse(out)
		clitest.CheckResponse(t, resp, err)
	})
}

func BenchmarkParse(b *testing.B) {
	out := clitest.ReadFile(b, filepath.Join(clitest.Dir, "claude-tool-stream.jsonl"))
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		if _, err := Parse(out); err != nil {
			b.Fatal(err)
		}
	}
}
