package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"collab/modelcli"
	"collab/proc"
)

// The test binary is its own fake claude: with envFake set, TestMain runs
// fakeCLI instead of the tests.
const (
	envFake    = "CLAUDE_TEST_FAKE"    // the fixture to print ("-": none)
	envCapture = "CLAUDE_TEST_CAPTURE" // where to write what the fake got
	envStderr  = "CLAUDE_TEST_STDERR"  // printed on stderr
	envExit    = "CLAUDE_TEST_EXIT"    // exit status
	envGate    = "CLAUDE_TEST_GATE"    // after the first line, wait for this file
	envHang    = "CLAUDE_TEST_HANG"    // after the output, sleep
)

func TestMain(m *testing.M) {
	if os.Getenv(envFake) != "" {
		os.Exit(fakeCLI())
	}
	os.Exit(m.Run())
}

// captured is what the fake CLI saw.
type captured struct {
	Args  []string
	Stdin string
	Env   []string
	Dir   string
}

func fakeCLI() int {
	stdin, _ := io.ReadAll(os.Stdin)
	dir, _ := os.Getwd()
	if name := os.Getenv(envCapture); name != "" {
		b, _ := json.Marshal(captured{Args: os.Args, Stdin: string(stdin), Env: os.Environ(), Dir: dir})
		if err := os.WriteFile(name, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	if name := os.Getenv(envFake); name != "-" {
		out, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		for i, line := range strings.SplitAfter(string(out), "\n") {
			os.Stdout.WriteString(line)
			if gate := os.Getenv(envGate); i == 0 && gate != "" {
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
					if _, err := os.Stat(gate); err == nil {
						break
					}
					if time.Now().After(deadline) {
						fmt.Fprintln(os.Stderr, "gate never opened")
						return 3
					}
				}
			}
		}
	}
	fmt.Fprint(os.Stderr, os.Getenv(envStderr))
	if os.Getenv(envHang) != "" {
		time.Sleep(time.Hour)
	}
	code, _ := strconv.Atoi(os.Getenv(envExit))
	return code
}

// fake returns an Adapter running the test binary as claude, and the
// request environment that makes it print fixture (with extra variables).
func fake(t *testing.T, fixture string, env ...string) (*Adapter, []string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if fixture != "-" {
		fixture, err = filepath.Abs(filepath.Join("..", "testdata", fixture))
		if err != nil {
			t.Fatal(err)
		}
	}
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return &Adapter{Bin: self, KillGrace: 500 * time.Millisecond},
		append([]string{envFake + "=" + fixture, "GORACE=" + gorace}, env...)
}

func readCapture(t *testing.T, name string) captured {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var c captured
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestArgv(t *testing.T) {
	tests := []struct {
		name    string
		a       Adapter
		session string
		want    []string
	}{
		{
			name: "defaults",
			want: []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"},
		},
		{
			name: "everything", session: "0f0e7a57-0000-4000-8000-000000000000",
			a: Adapter{
				Bin: "/opt/claude", Model: "opus", Args: []string{"--effort", "high", "two words"},
				PermissionMode: "dontAsk", AllowedTools: []string{"Bash(git diff:*)", "Edit"}, MaxTurns: 7,
				SystemPrompt: "be brief", MCPConfig: `{"mcpServers":{}}`,
			},
			want: []string{
				"/opt/claude", "-p", "--allowedTools", "Bash(git diff:*)", "Edit",
				"--mcp-config", `{"mcpServers":{}}`, "--strict-mcp-config",
				"--output-format", "stream-json", "--verbose", "--permission-mode", "dontAsk",
				"--model", "opus", "--max-turns", "7", "--append-system-prompt", "be brief",
				"--resume", "0f0e7a57-0000-4000-8000-000000000000", "--effort", "high", "two words",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.a.argv(tt.session)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestBypassRefused(t *testing.T) {
	a := &Adapter{Bin: "/nonexistent", PermissionMode: "bypassPermissions"}
	if _, err := a.Run(context.Background(), modelcli.Request{Prompt: "hi"}); !errors.Is(err, ErrBypass) {
		t.Errorf("got %v, want ErrBypass", err)
	}
}

func TestRun(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "capture")
	a, env := fake(t, "claude-stream.jsonl", envCapture+"="+capture, "COLLAB_AGENT=alice")
	a.Model, a.Args = "sonnet", []string{"--effort", "low"}
	a.Env = []string{"CLAUDE_CODE_MAX_RETRIES=2"}
	dir := t.TempDir()
	var live []modelcli.Event
	prompt := "hello $(whoami) `id` \"quoted\"\nsecond line"
	resp, err := a.Run(context.Background(), modelcli.Request{
		Prompt: prompt, Env: env, Dir: dir, Timeout: time.Minute,
		Session: "96bd95ef-87f2-4c95-9f0f-141abb1facd2",
		OnEvent: func(e modelcli.Event) { live = append(live, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "echo: Say hello." || resp.Session != "cc17d39c-f2bb-4cf7-8751-b8a5cc4a9027" || resp.CostUSD == 0 {
		t.Errorf("got %+v", resp)
	}
	if resp.Duration <= 0 {
		t.Errorf("duration %v, want it measured", resp.Duration)
	}
	if !slices.EqualFunc(live, resp.Events, func(a, b modelcli.Event) bool { return a.Kind == b.Kind && a.Time.Equal(b.Time) && a.Text == b.Text }) {
		t.Errorf("OnEvent got %v, want the response's events %v", kinds(live), kinds(resp.Events))
	}
	c := readCapture(t, capture)
	wantArgs := []string{a.Bin, "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits",
		"--model", "sonnet", "--resume", "96bd95ef-87f2-4c95-9f0f-141abb1facd2", "--effort", "low"}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("argv: got %q, want %q", c.Args, wantArgs)
	}
	if c.Stdin != prompt {
		t.Errorf("stdin: got %q, want the prompt %q", c.Stdin, prompt)
	}
	if c.Dir != dir {
		t.Errorf("dir: got %q, want %q", c.Dir, dir)
	}
	for _, kv := range []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "COLLAB_AGENT=alice", "CLAUDE_CODE_MAX_RETRIES=2"} {
		if !slices.Contains(c.Env, kv) {
			t.Errorf("env: no %s", kv)
		}
	}
}

// TestEnvPrecedence: the operator's environment wins over the adapter's
// defaults; Adapter.Env and Request.Env win over both.
func TestEnvPrecedence(t *testing.T) {
	t.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "0")
	t.Setenv("CLAUDE_TEST_FROM_OS", "os")
	capture := filepath.Join(t.TempDir(), "capture")
	a, env := fake(t, "claude-stream.jsonl", envCapture+"="+capture, "CLAUDE_TEST_FROM_OS=request")
	if _, err := a.Run(context.Background(), modelcli.Request{Prompt: "hi", Env: env}); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range readCapture(t, capture).Env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	if got["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] != "0" || got["CLAUDE_TEST_FROM_OS"] != "request" {
		t.Errorf("got %q and %q, want 0 (the operator's) and request", got["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"], got["CLAUDE_TEST_FROM_OS"])
	}
}

// TestRunLive: events reach OnEvent while the CLI runs, not at its end.
func TestRunLive(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	a, env := fake(t, "claude-tool-stream.jsonl", envGate+"="+gate)
	var got []string
	resp, err := a.Run(context.Background(), modelcli.Request{
		Prompt: "go", Env: env, Timeout: time.Minute,
		OnEvent: func(e modelcli.Event) {
			got = append(got, e.Kind)
			if e.Kind == modelcli.EventStarted {
				// The fake waits for this before printing the rest.
				if err := os.WriteFile(gate, nil, 0o644); err != nil {
					t.Error(err)
				}
			}
		},
	})
	if err != nil {
		t.Fatalf("got %v (stderr %q); want the fake to see the gate opened by the started event", err, resp.Stderr)
	}
	if want := []string{"started", "tool_call", "progress", "completed"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestRunFailures(t *testing.T) {
	tests := []struct {
		name       string
		fixture    string
		env        []string
		session    string
		wantIs     error // nil: any error
		wantMsg    string
		wantStderr string
	}{
		{
			name: "API error", fixture: "claude-error-stream.jsonl",
			env:     []string{envExit + "=1", envStderr + "=some noise\n"},
			wantMsg: "claude: API Error: 400 fake bad request", wantStderr: "some noise\n",
		},
		{
			name: "resume refused", fixture: "-", session: "0f0e7a57-0000-4000-8000-000000000000",
			env:    []string{envExit + "=1", envStderr + "=No conversation found with session ID: 0f0e7a57-0000-4000-8000-000000000000\n"},
			wantIs: modelcli.ErrSessionGone, wantMsg: "No conversation found",
			wantStderr: "No conversation found with session ID: 0f0e7a57-0000-4000-8000-000000000000\n",
		},
		{
			name: "crash without output", fixture: "-",
			env:        []string{envExit + "=3", envStderr + "=TypeError: undefined is not a function\n"},
			wantMsg:    "exit status 3: TypeError: undefined is not a function",
			wantStderr: "TypeError: undefined is not a function\n",
		},
		{
			name: "nothing at all", fixture: "-", wantIs: errNoResult,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, env := fake(t, tt.fixture, tt.env...)
			resp, err := a.Run(context.Background(), modelcli.Request{Prompt: "hi", Env: env, Session: tt.session})
			if err == nil || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("got %v, want an error (%v) containing %q", err, tt.wantIs, tt.wantMsg)
			}
			if resp.Text != "" {
				t.Errorf("text %q, want none", resp.Text)
			}
			if resp.Stderr != tt.wantStderr {
				t.Errorf("stderr: got %q, want %q", resp.Stderr, tt.wantStderr)
			}
			if n := len(resp.Events); n == 0 || resp.Events[n-1].Kind != modelcli.EventError {
				t.Errorf("events %v, want the last an error", kinds(resp.Events))
			}
		})
	}
}

func TestRunStopped(t *testing.T) {
	for _, how := range []string{"cancel", "timeout"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			a, env := fake(t, "claude-stream.jsonl", envHang+"=1")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := modelcli.Request{Prompt: "hi", Env: env}
			want := error(context.Canceled)
			if how == "timeout" {
				req.Timeout, want = 300*time.Millisecond, proc.ErrTimeout
			} else {
				time.AfterFunc(300*time.Millisecond, cancel)
			}
			start := time.Now()
			resp, err := a.Run(ctx, req)
			if !errors.Is(err, want) {
				t.Fatalf("got %v, want %v", err, want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to stop", d)
			}
			// The result line came before the kill, but a killed run fails.
			if resp.Text != "" || resp.Events[len(resp.Events)-1].Kind != modelcli.EventError {
				t.Errorf("got text %q, events %v; want no text, the last event an error", resp.Text, kinds(resp.Events))
			}
		})
	}
}
