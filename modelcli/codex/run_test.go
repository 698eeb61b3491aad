package codex

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

// The test binary is its own fake codex: with envFake set, TestMain runs
// fakeCLI instead of the tests.
const (
	envFake    = "CODEX_TEST_FAKE"    // the fixture to print ("-": none)
	envCapture = "CODEX_TEST_CAPTURE" // where to write what the fake got
	envStderr  = "CODEX_TEST_STDERR"  // printed on stderr
	envExit    = "CODEX_TEST_EXIT"    // exit status
	envGate    = "CODEX_TEST_GATE"    // after the first line, wait for this file
	envHang    = "CODEX_TEST_HANG"    // after the output, sleep
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

// fake returns an Adapter running the test binary as codex, and the
// request environment that makes it print fixture (with extra variables).
func fake(t *testing.T, fixture string, env ...string) (*Adapter, []string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if fixture != "-" && !filepath.IsAbs(fixture) {
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
		a       *Adapter
		session string
		want    []string
	}{
		{
			name: "defaults", a: &Adapter{},
			want: []string{"codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write",
				"-c", "analytics.enabled=false", "--disable", "plugins", "-"},
		},
		{
			name: "resume, everything", session: "01a20185-cda8-7ca2-a635-4c05f66a9f9b",
			a: &Adapter{Bin: "/opt/codex", Model: "gpt-5.5", Sandbox: "read-only", Args: []string{"-c", "model_reasoning_effort=\"low\""}},
			want: []string{"/opt/codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "read-only",
				"-c", "analytics.enabled=false", "--disable", "plugins", "--model", "gpt-5.5",
				"-c", "model_reasoning_effort=\"low\"", "resume", "01a20185-cda8-7ca2-a635-4c05f66a9f9b", "-"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.argv(tt.session); !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestNotAThreadID: a session that is not a UUID is refused before
// anything runs, as Codex would start a new thread instead.
func TestNotAThreadID(t *testing.T) {
	a := &Adapter{Bin: "/nonexistent"}
	for _, s := range []string{"latest", "my thread", "--last", "01a20185-cda8-7ca2-a635-4c05f66a9f9"} {
		if _, err := a.Run(context.Background(), modelcli.Request{Prompt: "hi", Session: s}); !errors.Is(err, modelcli.ErrSessionGone) {
			t.Errorf("session %q: got %v, want ErrSessionGone", s, err)
		}
	}
}

func TestRun(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "capture")
	a, env := fake(t, "codex-resume.jsonl", envCapture+"="+capture, "COLLAB_AGENT=alice")
	a.Model, a.Env = "gpt-5.5", []string{"CODEX_TEST_FROM_ADAPTER=1"}
	dir := t.TempDir()
	var live []modelcli.Event
	prompt := "hello $(whoami) `id` \"quoted\"\nsecond line"
	const thread = "01a2018f-7885-7541-a2b8-26c1330c0eb4"
	resp, err := a.Run(context.Background(), modelcli.Request{
		Prompt: prompt, Env: env, Dir: dir, Timeout: time.Minute, Session: thread,
		OnEvent: func(e modelcli.Event) { live = append(live, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "echo: Which word did I ask you to remember?" || resp.Session != thread || resp.Duration <= 0 {
		t.Errorf("got %+v", resp)
	}
	if !slices.EqualFunc(live, resp.Events, func(a, b modelcli.Event) bool { return a.Kind == b.Kind && a.Time.Equal(b.Time) && a.Text == b.Text }) {
		t.Errorf("OnEvent got %v, want the response's events %v", kinds(live), kinds(resp.Events))
	}
	c := readCapture(t, capture)
	if want := a.argv(thread); !slices.Equal(c.Args, want) {
		t.Errorf("argv: got %q, want %q", c.Args, want)
	}
	if c.Stdin != prompt {
		t.Errorf("stdin: got %q, want the prompt %q", c.Stdin, prompt)
	}
	if c.Dir != dir {
		t.Errorf("dir: got %q, want %q", c.Dir, dir)
	}
	for _, kv := range []string{"COLLAB_AGENT=alice", "CODEX_TEST_FROM_ADAPTER=1"} {
		if !slices.Contains(c.Env, kv) {
			t.Errorf("env: no %s", kv)
		}
	}
}

// TestRunLive: events reach OnEvent while the CLI runs, not at its end.
func TestRunLive(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	a, env := fake(t, "codex-tool.jsonl", envGate+"="+gate)
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
	gone, err := os.ReadFile(filepath.Join("..", "testdata", "codex-resume-missing.stderr"))
	if err != nil {
		t.Fatal(err)
	}
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
			name: "API error", fixture: "codex-error-400.jsonl",
			env:     []string{envExit + "=1", envStderr + "=some noise\n"},
			wantMsg: "codex: fake bad request", wantStderr: "some noise\n",
		},
		{
			name: "resume refused", fixture: "-", session: "0f0e7a57-0000-4000-8000-000000000000",
			env:    []string{envExit + "=1", envStderr + "=" + string(gone)},
			wantIs: modelcli.ErrSessionGone, wantMsg: "no rollout found", wantStderr: string(gone),
		},
		{
			name: "crash without output", fixture: "-",
			env:     []string{envExit + "=3", envStderr + "=Error: no such provider\n\nStack backtrace:\n   0: <unknown>\n"},
			wantMsg: "codex: no such provider (exit status 3)", wantStderr: "Error: no such provider\n\nStack backtrace:\n   0: <unknown>\n",
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
			a, env := fake(t, "codex-exec.jsonl", envHang+"=1")
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

// TestRunUsageAcrossResumes: a resumed thread reports its whole count;
// Run reports the run's share.
func TestRunUsageAcrossResumes(t *testing.T) {
	const thread = "01a2018f-7885-7541-a2b8-26c1330c0eb4"
	dir := t.TempDir()
	write := func(name string, in, cached, out int) string {
		lines := `{"type":"thread.started","thread_id":"` + thread + `"}` + "\n" +
			`{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"ok"}}` + "\n" +
			fmt.Sprintf(`{"type":"turn.completed","usage":{"input_tokens":%d,"cached_input_tokens":%d,"output_tokens":%d}}`, in, cached, out) + "\n"
		name = filepath.Join(dir, name)
		if err := os.WriteFile(name, []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	first, second := write("first", 1000, 0, 10), write("second", 2100, 900, 25)
	a, env := fake(t, first)
	resp, err := a.Run(context.Background(), modelcli.Request{Prompt: "one", Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if want := (modelcli.Usage{Input: 1000, Output: 10}); resp.Usage != want {
		t.Errorf("first run: got %+v, want %+v", resp.Usage, want)
	}
	_, env = fake(t, second)
	resp, err = a.Run(context.Background(), modelcli.Request{Prompt: "two", Env: env, Session: resp.Session})
	if err != nil {
		t.Fatal(err)
	}
	// Thread totals: input 1200 uncached + 900 cached, output 25.
	if want := (modelcli.Usage{Input: 200, CacheRead: 900, Output: 15}); resp.Usage != want {
		t.Errorf("resumed run: got %+v, want %+v", resp.Usage, want)
	}
}
