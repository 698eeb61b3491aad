package gemini

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/testsupport/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m) }

// fake returns an Adapter running the test binary as gemini: the fake CLI
// of clitest.
func fake(t testing.TB) *Adapter {
	return &Adapter{Bin: clitest.FakeBin(t), KillGrace: 500 * time.Millisecond}
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
			want: []string{"gemini", "--output-format", "stream-json", "--model", "gemini-2.5-pro", "--skip-trust",
				"--approval-mode", "auto_edit", "--prompt", ""},
		},
		{
			name: "everything", session: "09f07261-6c16-42a8-ade9-1856461796d5",
			a: Adapter{Bin: "/opt/gemini", Model: "gemini-2.5-flash", ApprovalMode: "default", Args: []string{"--include-directories", "/srv/a b"}},
			want: []string{"/opt/gemini", "--output-format", "stream-json", "--model", "gemini-2.5-flash", "--skip-trust",
				"--approval-mode", "default", "--resume", "09f07261-6c16-42a8-ade9-1856461796d5",
				"--include-directories", "/srv/a b", "--prompt", ""},
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

func TestRun(t *testing.T) {
	a := fake(t)
	a.Env = []string{"GEMINI_TEST_FROM_ADAPTER=1"}
	resp, c := clitest.RunCaptured(t, a, "gemini-tool-stream.jsonl", modelcli.Request{Env: []string{"COLLAB_AGENT=alice"}})
	if resp.Text != "tool said: tool-output-42" || resp.Session != "ce976cc6-a470-49ee-a22a-4229372b9e4b" || resp.Duration <= 0 {
		t.Errorf("got %+v", resp)
	}
	if want := a.argv(""); !slices.Equal(c.Args, want) {
		t.Errorf("argv: got %q, want %q", c.Args, want)
	}
	for _, kv := range []string{"GEMINI_CLI_NO_RELAUNCH=true", "NO_COLOR=1", "GEMINI_TEST_FROM_ADAPTER=1"} {
		if !slices.Contains(c.Env, kv) {
			t.Errorf("env: no %s", kv)
		}
	}
}

// TestEnvPrecedence: the operator's environment wins over the adapter's
// defaults; Adapter.Env and Request.Env win over both.
func TestEnvPrecedence(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("GEMINI_TEST_FROM_OS", "os")
	_, c := clitest.RunCaptured(t, fake(t), "gemini-stream.jsonl", modelcli.Request{Env: []string{"GEMINI_TEST_FROM_OS=request"}})
	for k, want := range map[string]string{"NO_COLOR": "", "GEMINI_TEST_FROM_OS": "request", "GEMINI_CLI_NO_RELAUNCH": "true"} {
		if got := c.Getenv(k); got != want {
			t.Errorf("%s: got %q, want %q", k, got, want)
		}
	}
}

// TestRunLive: events reach OnEvent while the CLI runs, not at its end.
func TestRunLive(t *testing.T) {
	clitest.TestLive(t, fake(t), "gemini-tool-stream.jsonl", []string{"started", "tool_call", "progress", "completed"})
}

func TestRunFailures(t *testing.T) {
	gone := string(clitest.ReadFile(t, filepath.Join(clitest.Dir, "gemini-resume-missing.stderr")))
	clitest.TestFailures(t, fake(t), []clitest.Failure{
		{
			Name: "API error", Fixture: "gemini-error-stream.jsonl",
			Env:     []string{clitest.EnvExit + "=144", clitest.EnvStderr + "=some noise\n"},
			WantMsg: "gemini: fake bad request (HTTP 400 INVALID_ARGUMENT)", WantStderr: "some noise\n",
		},
		{
			Name: "resume refused", Fixture: "-", Session: "00000000-0000-4000-8000-000000000000",
			Env:    []string{clitest.EnvExit + "=42", clitest.EnvStderr + "=" + gone},
			WantIs: modelcli.ErrSessionGone, WantMsg: "Invalid session identifier", WantStderr: gone,
		},
		{
			Name: "no auth", Fixture: "-",
			Env:     []string{clitest.EnvExit + "=41", clitest.EnvStderr + "=Warning: 256-color support not detected.\nInvalid auth method selected.\n"},
			WantMsg: "gemini: Invalid auth method selected. (exit status 41)", WantStderr: "Warning: 256-color support not detected.\nInvalid auth method selected.\n",
		},
		{
			Name: "nothing at all", Fixture: "-", WantIs: errNoResult,
		},
	})
}

func TestRunStopped(t *testing.T) {
	clitest.TestStopped(t, fake(t), "gemini-stream.jsonl")
}
