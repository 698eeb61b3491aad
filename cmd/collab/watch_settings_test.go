package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
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
