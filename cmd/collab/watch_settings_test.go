package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestWatchRemoteChecksEverySetting: watch --remote refuses a setting
// that breaks a rule (here --session-scope, --poll, --budget-usd) with
// exit 2 before it dials NATS or writes its state: one validator checks
// every setting, not a part of them before the mirror and the rest after.
func TestWatchRemoteChecksEverySetting(t *testing.T) {
	keyPath := filepath.Join(t.TempDir(), "yves.key")
	if _, err := signing.NewKey(keyPath, "yves", false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ flag, value, want string }{
		{"--session-scope", "bogus", "--session-scope"},
		{"--poll", "1ms", "--poll"},
		{"--budget-usd", "-1", "--budget-usd"},
	} {
		t.Run(c.flag, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			env := map[string]string{"COLLAB_KEY": keyPath, "NATS_URL": "nats://127.0.0.1:1"}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r := runCollabCtx(t, ctx, env, "", "watch", "--remote", "--state-dir", state, "--agent", "yves",
				"--channel", "dev", "--cli", "command", "--cmd", os.Args[0], c.flag, c.value)
			if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, %q; want 2 and %q", r.code, r.stderr, c.want)
			}
			if _, err := os.Stat(state); err == nil {
				t.Errorf("%s written", state)
			}
		})
	}
}

// TestWatchRunEnvOnce: each variable of the watcher's part of a run's
// environment is written once, watch --remote's included (its
// COLLAB_KEY was written twice, once as given and once made absolute).
func TestWatchRunEnvOnce(t *testing.T) {
	root := tree.Root(t.TempDir())
	keyPath := filepath.Join(t.TempDir(), "yves.key")
	if _, err := signing.NewKey(keyPath, "yves", false); err != nil {
		t.Fatal(err)
	}
	s := watchSettings{Agent: "yves", Channels: []string{"dev"}, Cmd: os.Args[0],
		Poll: time.Second, Heartbeat: time.Second, Key: keyPath, RemoteState: "/state",
		BudgetUSD: 2, AllowWritableKeyring: true}
	p, err := prepareWatch(context.Background(), root, s, func(string) string { return "" }, io.Discard)
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
