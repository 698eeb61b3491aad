package watchsetup

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/live"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestPrepareLive: --live gives a claude, codex or gemini watcher a pool of live sessions
// (closed with the Watch), and is refused for the other CLIs.
func TestPrepareLive(t *testing.T) {
	for _, tt := range []struct {
		cli, cmd string
		want     string // "" ok, else in the error
	}{
		{"claude", os.Args[0], ""},
		{"codex", os.Args[0], ""},
		{"gemini", os.Args[0], ""},
		{"command", os.Args[0], "--live needs --cli claude, codex or gemini, not command"},
	} {
		t.Run(tt.cli, func(t *testing.T) {
			s := Settings{Agent: "yves", Channels: []string{"dev"}, CLI: tt.cli, Cmd: tt.cmd, Live: true, LiveMax: 2,
				Poll: time.Second, Heartbeat: time.Second, AllowWritableKeyring: true}
			p, err := Prepare(context.Background(), tree.Root(t.TempDir()), s, Host{})
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %v, want an error with %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if _, ok := p.Config.Live.(*live.Pool); !ok {
				t.Errorf("Live = %T, want a *live.Pool", p.Config.Live)
			}
		})
	}
}
