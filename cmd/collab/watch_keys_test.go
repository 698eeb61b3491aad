package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestWatchFirstRunWarnsOnce: a new user's first watch, on a tree just
// made by init where nobody has a key, says so once, with the one
// command that fixes it; not a keyring warning and two per agent.
func TestWatchFirstRunWarnsOnce(t *testing.T) {
	root := t.TempDir()
	env := map[string]string{"COLLAB_ROOT": root, "XDG_CONFIG_HOME": t.TempDir()}
	if r := runCollab(t, env, "", "init"); r.code != 0 {
		t.Fatalf("init: exit %d: %s", r.code, r.stderr)
	}
	// Accepted, the watcher runs: the deadline ends it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	r := runCollabCtx(t, ctx, env, "", "watch", "--agent", "codex", "--channel", "dev", "--cli", "command", "--cmd", os.Args[0])
	if r.code != 0 {
		t.Fatalf("watch: exit %d: %s", r.code, r.stderr)
	}
	warnings := strings.Count(r.stderr, "warning") + strings.Count(r.stderr, "level=WARN")
	if warnings != 1 || !strings.Contains(r.stderr, "run: collab key new --agent codex\n") {
		t.Errorf("%d warnings in %q; want one, ending with the command 'collab key new --agent codex'", warnings, r.stderr)
	}
}
