package claude

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/testsupport/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m) }

// fake returns an Adapter running the test binary as claude: the fake CLI
// of clitest.
func fake(t testing.TB) *Adapter {
	return &Adapter{Bin: clitest.FakeBin(t), KillGrace: 500 * time.Millisecond}
}

func TestArgv(t *testing.T) {
	tests := []struct {
		name    string
		a       Adapter
		session string
		grant   []string
		want    []string
	}{
		{
			name: "defaults",
			want: []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits", "--settings", Isolated},
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
				"--output-format", "stream-json", "--verbose", "--permission-mode", "dontAsk", "--settings", Isolated,
				"--model", "opus", "--max-turns", "7", "--append-system-prompt", "be brief",
				"--resume", "0f0e7a57-0000-4000-8000-000000000000", "--effort", "high", "two words",
			},
		},
		{
			name: "mcp servers",
			a: Adapter{
				AllowedTools: []string{"Edit"}, MCPConfig: "/etc/mcp.json",
				MCPServers: []modelcli.MCPServer{
					{Name: "collab", Command: "/opt/my bin/collab", Args: []string{"mcp", "--agent", "claude", "--root", `/srv/"odd" root`}, EnvVars: []string{"COLLAB_CHANNEL"}},
					{Name: "other", Command: "x"},
				},
			},
			want: []string{
				"claude", "-p", "--allowedTools", "Edit", "mcp__collab", "mcp__other",
				"--mcp-config", "/etc/mcp.json",
				`{"mcpServers":{"collab":{"type":"stdio","command":"/opt/my bin/collab","args":["mcp","--agent","claude","--root","/srv/\"odd\" root"]}}}`,
				`{"mcpServers":{"other":{"type":"stdio","command":"x","args":[]}}}`,
				"--strict-mcp-config",
				"--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits", "--settings", Isolated,
			},
		},
		{
			name: "granted for this run", session: "S1", grant: []string{"Bash(git push)", "Read(//etc/hostname)"},
			a: Adapter{AllowedTools: []string{"Edit"}, MCPServers: []modelcli.MCPServer{{Name: "collab", Command: "collab"}}},
			want: []string{
				"claude", "-p", "--allowedTools", "Edit", "Bash(git push)", "Read(//etc/hostname)", "mcp__collab",
				"--mcp-config", `{"mcpServers":{"collab":{"type":"stdio","command":"collab","args":[]}}}`, "--strict-mcp-config",
				"--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits", "--settings", Isolated, "--resume", "S1",
			},
		},
		{
			name: "granted, nothing else allowed", grant: []string{"WebSearch"},
			want: []string{"claude", "-p", "--allowedTools", "WebSearch", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits", "--settings", Isolated},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allowed := slices.Clone(tt.a.AllowedTools)
			got, err := tt.a.argv(tt.session, tt.grant)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
			if !slices.Equal(tt.a.AllowedTools, allowed) {
				t.Errorf("argv changed AllowedTools to %q", tt.a.AllowedTools)
			}
		})
	}
}

func TestMCPServerRefused(t *testing.T) {
	for _, srv := range []modelcli.MCPServer{
		{Name: "", Command: "collab"},
		{Name: "a b", Command: "collab"},
		{Name: "a.b", Command: "collab"},
		{Name: "collab"},
		{Name: "collab", Command: "collab", EnvVars: []string{"A=B"}},
	} {
		a := Adapter{MCPServers: []modelcli.MCPServer{srv}}
		if got, err := a.argv("", nil); err == nil {
			t.Errorf("%+v: argv %q, want an error", srv, got)
		}
	}
}

func TestBypassRefused(t *testing.T) {
	a := &Adapter{Bin: "/nonexistent", PermissionMode: "bypassPermissions"}
	if _, err := a.Run(context.Background(), modelcli.Request{Prompt: "hi"}); !errors.Is(err, ErrBypass) {
		t.Errorf("got %v, want ErrBypass", err)
	}
}

func TestRun(t *testing.T) {
	a := fake(t)
	a.Model, a.Args = "sonnet", []string{"--effort", "low"}
	a.Env = []string{"CLAUDE_CODE_MAX_RETRIES=2"}
	resp, c := clitest.RunCaptured(t, a, "claude-stream.jsonl", modelcli.Request{
		Env:     []string{"COLLAB_AGENT=alice"},
		Session: "96bd95ef-87f2-4c95-9f0f-141abb1facd2",
	})
	if resp.Text != "echo: Say hello." || resp.Session != "cc17d39c-f2bb-4cf7-8751-b8a5cc4a9027" || resp.CostUSD == 0 {
		t.Errorf("got %+v", resp)
	}
	if resp.Duration <= 0 {
		t.Errorf("duration %v, want it measured", resp.Duration)
	}
	wantArgs := []string{a.Bin, "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits", "--settings", Isolated,
		"--model", "sonnet", "--resume", "96bd95ef-87f2-4c95-9f0f-141abb1facd2", "--effort", "low"}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("argv: got %q, want %q", c.Args, wantArgs)
	}
	for _, kv := range []string{"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "CLAUDE_CODE_MAX_RETRIES=2"} {
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
	_, c := clitest.RunCaptured(t, fake(t), "claude-stream.jsonl", modelcli.Request{Env: []string{"CLAUDE_TEST_FROM_OS=request"}})
	if got, want := c.Getenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"), "0"; got != want {
		t.Errorf("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: got %q, want %q (the operator's)", got, want)
	}
	if got, want := c.Getenv("CLAUDE_TEST_FROM_OS"), "request"; got != want {
		t.Errorf("CLAUDE_TEST_FROM_OS: got %q, want %q", got, want)
	}
}

// TestRunLive: events reach OnEvent while the CLI runs, not at its end.
func TestRunLive(t *testing.T) {
	clitest.TestLive(t, fake(t), "claude-tool-stream.jsonl", []string{"started", "tool_call", "progress", "completed"})
}

func TestRunFailures(t *testing.T) {
	clitest.TestFailures(t, fake(t), []clitest.Failure{
		{
			Name: "API error", Fixture: "claude-error-stream.jsonl",
			Env:     []string{clitest.EnvExit + "=1", clitest.EnvStderr + "=some noise\n"},
			WantMsg: "claude: API Error: 400 fake bad request", WantStderr: "some noise\n",
		},
		{
			Name: "resume refused", Fixture: "-", Session: "0f0e7a57-0000-4000-8000-000000000000",
			Env:    []string{clitest.EnvExit + "=1", clitest.EnvStderr + "=No conversation found with session ID: 0f0e7a57-0000-4000-8000-000000000000\n"},
			WantIs: modelcli.ErrSessionGone, WantMsg: "No conversation found",
			WantStderr: "No conversation found with session ID: 0f0e7a57-0000-4000-8000-000000000000\n",
		},
		{
			Name: "crash without output", Fixture: "-",
			Env:        []string{clitest.EnvExit + "=3", clitest.EnvStderr + "=TypeError: undefined is not a function\n"},
			WantMsg:    "exit status 3: TypeError: undefined is not a function",
			WantStderr: "TypeError: undefined is not a function\n",
		},
		{
			Name: "nothing at all", Fixture: "-", WantIs: errNoResult,
		},
	})
}

func TestRunStopped(t *testing.T) {
	clitest.TestStopped(t, fake(t), "claude-stream.jsonl")
}
