package codex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/testsupport/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m) }

// fake returns an Adapter running the test binary as codex: the fake CLI
// of clitest.
func fake(t testing.TB) *Adapter {
	return &Adapter{Bin: clitest.FakeBin(t), KillGrace: 500 * time.Millisecond}
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
		{
			name: "mcp servers",
			a: &Adapter{Args: []string{"-c", "x=1"}, MCPServers: []modelcli.MCPServer{
				{Name: "collab", Command: "/opt/my bin/collab", Args: []string{"mcp", "--root", `/srv/"odd"\root`, "tab\there"},
					EnvVars: []string{"COLLAB_CHANNEL", "NATS_URL"}},
				{Name: "other", Command: "x"},
			}},
			want: []string{"codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write",
				"-c", "analytics.enabled=false", "--disable", "plugins",
				"-c", `mcp_servers.collab.command="/opt/my bin/collab"`,
				"-c", `mcp_servers.collab.args=["mcp","--root","/srv/\"odd\"\\root","tab\u0009here"]`,
				"-c", `mcp_servers.collab.env_vars=["COLLAB_CHANNEL","NATS_URL"]`,
				"-c", `mcp_servers.collab.default_tools_approval_mode="approve"`,
				"-c", `mcp_servers.other.command="x"`,
				"-c", `mcp_servers.other.args=[]`,
				"-c", `mcp_servers.other.default_tools_approval_mode="approve"`,
				"-c", "x=1", "-"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.a.argv(tt.session)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("got  %q, %v\nwant %q", got, err, tt.want)
			}
		})
	}
}

func TestMCPServerRefused(t *testing.T) {
	for _, srv := range []modelcli.MCPServer{
		{Name: "", Command: "collab"},
		{Name: "a.b", Command: "collab"},
		{Name: `a"]`, Command: "collab"},
		{Name: "collab"},
		{Name: "collab", Command: "collab", EnvVars: []string{"A B"}},
	} {
		a := &Adapter{MCPServers: []modelcli.MCPServer{srv}}
		if got, err := a.argv(""); err == nil {
			t.Errorf("%+v: argv %q, want an error", srv, got)
		}
	}
}

func TestTOMLString(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", `""`},
		{"plain /path", `"plain /path"`},
		{`q"b\`, `"q\"b\\"`},
		{"nl\n del\x7f nul\x00", `"nl\u000A del\u007F nul\u0000"`},
		{"é ☃ \u2028", "\"é ☃ \u2028\""},
		{"bad \xff", "\"bad \uFFFD\""},
	} {
		if got := tomlString(tt.in); got != tt.want {
			t.Errorf("tomlString(%q) = %s, want %s", tt.in, got, tt.want)
		}
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
	a := fake(t)
	a.Model, a.Env = "gpt-5.5", []string{"CODEX_TEST_FROM_ADAPTER=1"}
	const thread = "01a2018f-7885-7541-a2b8-26c1330c0eb4"
	resp, c := clitest.RunCaptured(t, a, "codex-resume.jsonl", modelcli.Request{Env: []string{"COLLAB_AGENT=alice"}, Session: thread})
	if resp.Text != "echo: Which word did I ask you to remember?" || resp.Session != thread || resp.Duration <= 0 {
		t.Errorf("got %+v", resp)
	}
	if want, _ := a.argv(thread); !slices.Equal(c.Args, want) {
		t.Errorf("argv: got %q, want %q", c.Args, want)
	}
	if !slices.Contains(c.Env, "CODEX_TEST_FROM_ADAPTER=1") {
		t.Error("env: no CODEX_TEST_FROM_ADAPTER=1")
	}
}

// TestRunLive: events reach OnEvent while the CLI runs, not at its end.
func TestRunLive(t *testing.T) {
	clitest.TestLive(t, fake(t), "codex-tool.jsonl", []string{"started", "tool_call", "progress", "completed"})
}

func TestRunFailures(t *testing.T) {
	gone := string(clitest.ReadFile(t, filepath.Join(clitest.Dir, "codex-resume-missing.stderr")))
	clitest.TestFailures(t, fake(t), []clitest.Failure{
		{
			Name: "API error", Fixture: "codex-error-400.jsonl",
			Env:     []string{clitest.EnvExit + "=1", clitest.EnvStderr + "=some noise\n"},
			WantMsg: "codex: fake bad request", WantStderr: "some noise\n",
		},
		{
			Name: "resume refused", Fixture: "-", Session: "0f0e7a57-0000-4000-8000-000000000000",
			Env:    []string{clitest.EnvExit + "=1", clitest.EnvStderr + "=" + gone},
			WantIs: modelcli.ErrSessionGone, WantMsg: "no rollout found", WantStderr: gone,
		},
		{
			Name: "crash without output", Fixture: "-",
			Env:     []string{clitest.EnvExit + "=3", clitest.EnvStderr + "=Error: no such provider\n\nStack backtrace:\n   0: <unknown>\n"},
			WantMsg: "codex: no such provider (exit status 3)", WantStderr: "Error: no such provider\n\nStack backtrace:\n   0: <unknown>\n",
		},
		{
			Name: "nothing at all", Fixture: "-", WantIs: errNoResult,
		},
	})
}

func TestRunStopped(t *testing.T) {
	clitest.TestStopped(t, fake(t), "codex-exec.jsonl")
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
	a := fake(t)
	resp, err := a.Run(context.Background(), modelcli.Request{Prompt: "one", Env: clitest.FakeEnv(t, first)})
	if err != nil {
		t.Fatal(err)
	}
	if want := (modelcli.Usage{Input: 1000, Output: 10}); resp.Usage != want {
		t.Errorf("first run: got %+v, want %+v", resp.Usage, want)
	}
	resp, err = a.Run(context.Background(), modelcli.Request{Prompt: "two", Env: clitest.FakeEnv(t, second), Session: resp.Session})
	if err != nil {
		t.Fatal(err)
	}
	// Thread totals: input 1200 uncached + 900 cached, output 25.
	if want := (modelcli.Usage{Input: 200, CacheRead: 900, Output: 15}); resp.Usage != want {
		t.Errorf("resumed run: got %+v, want %+v", resp.Usage, want)
	}
}
