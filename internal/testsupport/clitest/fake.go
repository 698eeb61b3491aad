package clitest

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

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/proc"
)

// The fake CLI is the test binary itself, re-executed (the way os/exec
// tests itself): with envFixture set, Main runs the fake instead of the
// tests. It reads standard input, prints a fixture, and takes its orders
// from these variables of the request's environment.
const (
	EnvCapture = "CLITEST_CAPTURE" // where to write what the fake got (Captured, as JSON)
	EnvStderr  = "CLITEST_STDERR"  // printed on standard error, after the fixture
	EnvExit    = "CLITEST_EXIT"    // exit status
	EnvGate    = "CLITEST_GATE"    // after the first line, wait for this file
	EnvHang    = "CLITEST_HANG"    // after the output, sleep

	envFixture = "CLITEST_FIXTURE" // the fixture to print ("-": none)
)

// Main is TestMain for the tests of an adapter that run FakeBin: in the
// fake it runs the fake CLI, else the tests.
func Main(m *testing.M) {
	if os.Getenv(envFixture) != "" {
		os.Exit(fakeCLI())
	}
	os.Exit(m.Run())
}

// Captured is what the fake CLI saw.
type Captured struct {
	Args  []string
	Stdin string
	Env   []string
	Dir   string
}

// Getenv returns the value of key in the environment the fake saw, ""
// if none.
func (c Captured) Getenv(key string) string {
	var v string
	for _, kv := range c.Env {
		if k, val, _ := strings.Cut(kv, "="); k == key {
			v = val
		}
	}
	return v
}

func fakeCLI() int {
	stdin, _ := io.ReadAll(os.Stdin)
	dir, _ := os.Getwd()
	if name := os.Getenv(EnvCapture); name != "" {
		b, _ := json.Marshal(Captured{Args: os.Args, Stdin: string(stdin), Env: os.Environ(), Dir: dir})
		if err := os.WriteFile(name, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	if name := os.Getenv(envFixture); name != "-" {
		out, err := os.ReadFile(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		for i, line := range strings.SplitAfter(string(out), "\n") {
			os.Stdout.WriteString(line)
			if gate := os.Getenv(EnvGate); i == 0 && gate != "" {
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
	fmt.Fprint(os.Stderr, os.Getenv(EnvStderr))
	if os.Getenv(EnvHang) != "" {
		time.Sleep(time.Hour)
	}
	code, _ := strconv.Atoi(os.Getenv(EnvExit))
	return code
}

// FakeBin returns the test binary, to run as the CLI (see Main).
func FakeBin(tb testing.TB) string {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return self
}

// FakeEnv returns the request environment that makes the fake CLI print
// fixture (a file in Dir, an absolute path, or "-" for nothing), followed
// by env (such as EnvExit+"=1").
func FakeEnv(tb testing.TB, fixture string, env ...string) []string {
	tb.Helper()
	if fixture != "-" && !filepath.IsAbs(fixture) {
		var err error
		if fixture, err = filepath.Abs(filepath.Join(Dir, fixture)); err != nil {
			tb.Fatal(err)
		}
	}
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return append([]string{envFixture + "=" + fixture, "GORACE=" + gorace}, env...)
}

// ReadCaptured returns what the fake CLI wrote to the file name, given as
// EnvCapture.
func ReadCaptured(tb testing.TB, name string) Captured {
	tb.Helper()
	var c Captured
	if err := json.Unmarshal(ReadFile(tb, name), &c); err != nil {
		tb.Fatal(err)
	}
	return c
}

// RunCaptured runs r, a fake, once: the fake prints fixture and captures
// what it got, the prompt is full of shell syntax and the working
// directory a fresh one; req gives the rest (Session, Env: added to the
// fake's). It fails t unless the run succeeds, the fake got the prompt
// on standard input, ran in that directory and saw req.Env, and OnEvent
// saw the response's events. It returns the response and what the fake
// got, for the adapter's own checks.
func RunCaptured(t *testing.T, r Runner, fixture string, req modelcli.Request) (modelcli.Response, Captured) {
	t.Helper()
	capture := filepath.Join(t.TempDir(), "capture")
	wantEnv := req.Env
	req.Env = FakeEnv(t, fixture, append([]string{EnvCapture + "=" + capture}, req.Env...)...)
	req.Dir = t.TempDir()
	req.Prompt = "hello $(whoami) `id` \"quoted\"\nsecond line"
	req.Timeout = time.Minute
	var live []modelcli.Event
	req.OnEvent = func(e modelcli.Event) { live = append(live, e) }
	resp, err := r.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("%v (stderr %q)", err, resp.Stderr)
	}
	if !slices.EqualFunc(live, resp.Events, func(a, b modelcli.Event) bool { return a.Kind == b.Kind && a.Time.Equal(b.Time) && a.Text == b.Text }) {
		t.Errorf("OnEvent got %v, want the response's events %v", Kinds(live), Kinds(resp.Events))
	}
	c := ReadCaptured(t, capture)
	if c.Stdin != req.Prompt {
		t.Errorf("stdin: got %q, want the prompt %q", c.Stdin, req.Prompt)
	}
	if c.Dir != req.Dir {
		t.Errorf("dir: got %q, want %q", c.Dir, req.Dir)
	}
	for _, kv := range wantEnv {
		if !slices.Contains(c.Env, kv) {
			t.Errorf("env: no %s", kv)
		}
	}
	return resp, c
}

// TestLive checks that events reach OnEvent while the CLI runs, not at its
// end: the fake prints the first line of fixture, then waits for the
// started event before it prints the rest. want is the kinds of the
// events.
func TestLive(t *testing.T, r Runner, fixture string, want []string) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	var got []string
	resp, err := r.Run(context.Background(), modelcli.Request{
		Prompt: "go", Env: FakeEnv(t, fixture, EnvGate+"="+gate), Timeout: time.Minute,
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
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// Failure is a case of TestFailures: a fake run that must fail.
type Failure struct {
	Name       string
	Fixture    string   // as for FakeEnv
	Env        []string // added to the fake's (EnvExit, EnvStderr)
	Session    string   // the request's
	WantIs     error    // nil: any error
	WantMsg    string   // a substring of the error
	WantStderr string   // the response's Stderr
}

// TestFailures runs each case in parallel and checks the run fails as it
// says, with no text, the standard error tail, and an error event last.
func TestFailures(t *testing.T, r Runner, cases []Failure) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			t.Parallel()
			req := modelcli.Request{Prompt: "hi", Env: FakeEnv(t, tt.Fixture, tt.Env...), Session: tt.Session}
			resp, err := r.Run(context.Background(), req)
			if err == nil || (tt.WantIs != nil && !errors.Is(err, tt.WantIs)) || !strings.Contains(err.Error(), tt.WantMsg) {
				t.Fatalf("got %v, want an error (%v) containing %q", err, tt.WantIs, tt.WantMsg)
			}
			if resp.Text != "" {
				t.Errorf("text %q, want none", resp.Text)
			}
			if resp.Stderr != tt.WantStderr {
				t.Errorf("stderr: got %q, want %q", resp.Stderr, tt.WantStderr)
			}
			if n := len(resp.Events); n == 0 || resp.Events[n-1].Kind != modelcli.EventError {
				t.Errorf("events %v, want the last an error", Kinds(resp.Events))
			}
		})
	}
}

// TestStopped checks that a run is stopped by its context and by its
// timeout, soon, and fails although fixture (a successful run) was
// printed whole before the fake hung.
func TestStopped(t *testing.T, r Runner, fixture string) {
	t.Helper()
	for _, how := range []string{"cancel", "timeout"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := modelcli.Request{Prompt: "hi", Env: FakeEnv(t, fixture, EnvHang+"=1")}
			want := error(context.Canceled)
			if how == "timeout" {
				req.Timeout, want = 300*time.Millisecond, proc.ErrTimeout
			} else {
				time.AfterFunc(300*time.Millisecond, cancel)
			}
			start := time.Now()
			resp, err := r.Run(ctx, req)
			if !errors.Is(err, want) {
				t.Fatalf("got %v, want %v", err, want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v to stop", d)
			}
			// The result came before the kill, but a killed run fails.
			if resp.Text != "" || resp.Events[len(resp.Events)-1].Kind != modelcli.EventError {
				t.Errorf("got text %q, events %v; want no text, the last event an error", resp.Text, Kinds(resp.Events))
			}
		})
	}
}
