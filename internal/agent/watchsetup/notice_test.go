package watchsetup

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestNoKeysSaidOnce: on a tree where nobody has a key yet (a new
// user's), the watchers of one process (a workflow's team) say so once,
// with the command that gives the agent a key, in place of the keyring's
// warning and each watcher's own (KeysNoticed).
func TestNoKeysSaidOnce(t *testing.T) {
	root := tree.Root(t.TempDir())
	if err := os.MkdirAll(root.Channels(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := keyring.Open(root.Keys()).Create(); err != nil { // this account's: the warning it replaces
		t.Fatal(err)
	}
	var stderr strings.Builder
	h := Host{Stderr: &stderr, Said: new(Said), Getenv: func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return t.TempDir() // no key
		}
		return ""
	}}
	for _, agent := range []string{"alice", "bob"} {
		s := Settings{Agent: agent, Channels: []string{"dev"}, Cmd: os.Args[0], Poll: time.Second, Heartbeat: time.Second}
		p, err := Prepare(context.Background(), root, s, h)
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
		if !p.Config.KeysNoticed {
			t.Errorf("%s: KeysNoticed false: its watcher would warn again", agent)
		}
	}
	out := stderr.String()
	if strings.Count(out, "warning") != 1 || !strings.Contains(out, "run: collab key new --agent alice\n") || strings.Contains(out, "owned by this account") {
		t.Errorf("stderr %q; want one notice naming 'collab key new --agent alice'", out)
	}
}
