package watchsetup

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// TestWatchMCP: the MCP server watch --mcp gives its CLI.
func TestWatchMCP(t *testing.T) {
	nf := &natsbus.Options{URL: "nats://h:4222", CredsFile: "/etc/c.creds"}
	got, err := mcpServers(true, "codex", tree.Root("rel/root"), "codex", nf, []string{"--remote", "--state-dir", "/s"})
	if err != nil || len(got) != 1 {
		t.Fatalf("mcpServers = %+v, %v", got, err)
	}
	exe, _ := os.Executable()
	abs, _ := filepath.Abs("rel/root")
	srv := got[0]
	want := []string{"mcp", "--agent", "codex", "--root", abs, "--nats", "nats://h:4222", "--nats-creds", "/etc/c.creds", "--remote", "--state-dir", "/s"}
	if srv.Name != "collab" || srv.Command != exe || !slices.Equal(srv.Args, want) || srv.Check() != nil {
		t.Errorf("server %+v; want %s %q", srv, exe, want)
	}
	// The run's channel and depth reach it; the channel is not fixed.
	for _, v := range []string{"COLLAB_CHANNEL", "COLLAB_HOPS", "NATS_PASSWORD"} {
		if !slices.Contains(srv.EnvVars, v) {
			t.Errorf("EnvVars %q lacks %s", srv.EnvVars, v)
		}
	}
	if slices.Contains(srv.Args, "--channel") {
		t.Errorf("args %q fix the channel", srv.Args)
	}
	if got, err := mcpServers(false, "claude", "/r", "claude", nil, nil); got != nil || err != nil {
		t.Errorf("off: %+v, %v", got, err)
	}
	for _, cli := range []string{"gemini", "command"} {
		if _, err := mcpServers(true, cli, "/r", "a", nil, nil); !errkind.Is(err, errkind.Invalid) {
			t.Errorf("--mcp with --cli %s: %v; want a usage error", cli, err)
		}
	}
}
