package watchsetup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestWatchRunEnvOnce: each variable of the watcher's part of a run's
// environment is written once, watch --remote's included (its
// COLLAB_KEY was written twice, once as given and once made absolute).
func TestWatchRunEnvOnce(t *testing.T) {
	root := tree.Root(t.TempDir())
	keyPath := filepath.Join(t.TempDir(), "yves.key")
	if _, err := signing.NewKey(keyPath, "yves", false); err != nil {
		t.Fatal(err)
	}
	s := Settings{Agent: "yves", Channels: []string{"dev"}, Cmd: os.Args[0],
		Poll: time.Second, Heartbeat: time.Second, Key: keyPath, RemoteState: "/state",
		BudgetUSD: 2, AllowWritableKeyring: true}
	p, err := Prepare(context.Background(), root, s, Host{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	seen := map[string]string{}
	for _, kv := range p.Config.Env {
		k, v, _ := strings.Cut(kv, "=")
		if old, dup := seen[k]; dup {
			t.Errorf("%s set twice: %q and %q", k, old, v)
		}
		seen[k] = v
	}
	for k, want := range map[string]string{"COLLAB_KEY": keyPath, "COLLAB_REMOTE": "1", "COLLAB_STATE_DIR": "/state",
		"COLLAB_MAX_HOPS": "6", "COLLAB_BUDGET_USD": "2"} {
		if seen[k] != want {
			t.Errorf("%s = %q, want %q (env %q)", k, seen[k], want, p.Config.Env)
		}
	}
}
