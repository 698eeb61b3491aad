package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/collabdev/collab/internal/testsupport/bindfstest"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// natsServer starts an embedded nats-server with JetStream and returns its
// URL.
func natsServer(t *testing.T) string {
	t.Helper()
	return natstest.Start(t, true, nil).URL()
}

func TestNATSInitSendParity(t *testing.T) {
	url := natsServer(t)
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "NATS_URL": url}
	r := runCollab(t, env, "", "nats", "init")
	if r.code != 0 || !strings.Contains(r.stdout, "created stream CHAT") || r.stderr != "" {
		t.Fatalf("nats init: exit %d, %q %q (a command says nothing on stderr when all is well)", r.code, r.stdout, r.stderr)
	}
	if r = runCollab(t, env, "", "nats", "init"); !strings.Contains(r.stdout, "updated") {
		t.Errorf("second init: %q", r.stdout)
	}
	if r = runCollab(t, env, "", "nats", "init", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"created": false`) || !strings.Contains(r.stdout, `"stream": "CHAT"`) {
		t.Errorf("init --json: exit %d, %q", r.code, r.stdout)
	}
	var ids []string
	for _, text := range []string{"one", "two", "three"} {
		r := runCollab(t, env, "", "send", "--agent", "a", "--channel", "c", text)
		if r.code != 0 || r.stderr != "" && !strings.Contains(r.stderr, "not a known agent") {
			t.Fatalf("send: exit %d, %q", r.code, r.stderr)
		}
		ids = append(ids, strings.TrimSpace(r.stdout))
	}
	if r = runCollab(t, env, "", "nats", "parity", "--channel", "c"); r.code != 0 || !strings.Contains(r.stdout, "3 files, 3 in the stream") {
		t.Errorf("parity after dual-write: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	os.Remove(filepath.Join(root, "channels", "c", ids[1]+".json"))
	r = runCollab(t, env, "", "nats", "parity", "--channel", "c")
	if r.code != 1 || !strings.Contains(r.stdout, "missing in the folder (1):\n  "+ids[1]) {
		t.Errorf("parity after a lost file: exit %d, %q", r.code, r.stdout)
	}
	// A file sent without NATS is missing in the stream.
	delete(env, "NATS_URL")
	id := strings.TrimSpace(runCollab(t, env, "", "send", "--agent", "a", "--channel", "c", "files only").stdout)
	env["NATS_URL"] = url
	if r = runCollab(t, env, "", "nats", "parity", "--channel", "c"); r.code != 1 || !strings.Contains(r.stdout, "missing in the stream (1):\n  "+id) {
		t.Errorf("parity after a file-only send: exit %d, %q", r.code, r.stdout)
	}
	r = runCollab(t, env, "", "nats", "parity", "--channel", "c", "--json")
	var p natsbus.ParityReport
	if err := json.Unmarshal([]byte(r.stdout), &p); r.code != 1 || err != nil {
		t.Fatalf("parity --json: exit %d, %q (%v)", r.code, r.stdout, err)
	}
	if p.Channel != "c" || p.Files != 3 || p.Stream != 3 || len(p.MissingInStream) != 1 || p.MissingInStream[0] != id ||
		len(p.MissingInFolder) != 1 || p.MissingInFolder[0] != ids[1] || p.Duplicates == nil {
		t.Errorf("parity --json = %+v", p)
	}
}

func TestNATSUnreachableSendStillWorks(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "NATS_URL": "nats://127.0.0.1:1"}
	r := runCollab(t, env, "", "send", "--agent", "a", "--channel", "c", "hello")
	if r.code != 0 || !strings.Contains(r.stderr, "files only") {
		t.Errorf("send with NATS down: exit %d, stderr %q; want 0 and a warning", r.code, r.stderr)
	}
	onlyMessage(t, root, "c")
}

// A watcher whose mount caches the folder for 30 s still answers at once
// when NATS announces the message; without NATS, polling would wait for the
// cache or the full rescan.
func TestNATSWakesWatcherAcrossCachedMount(t *testing.T) {
	t.Parallel() // mostly waiting on other processes and mounts
	url := natsServer(t)
	backing := newTree(t)
	a := bindfstest.Mount(t, backing, "-o", "attr_timeout=30,entry_timeout=30,negative_timeout=30")
	b := bindfstest.Mount(t, backing)
	os.MkdirAll(filepath.Join(backing, "channels", "dev"), 0o755)
	startWatcher(t, a, "codex", "dev", []string{"NATS_URL=" + url}, "--poll", "30s", "--no-fsnotify")
	time.Sleep(3 * time.Second) // let the watcher's reader trust the folder's cached attributes
	env := map[string]string{"COLLAB_ROOT": b, "NATS_URL": url}
	start := time.Now()
	r := runCollab(t, env, "", "send", "--agent", "human", "--channel", "dev", "--to", "codex", "quick?")
	id := strings.TrimSpace(r.stdout)
	waitFor(t, func() bool { return len(replies(t, b, "dev", "codex")[id]) == 1 })
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("answered after %v; NATS should beat the 30 s poll and the 30 s cache", d)
	}
}

// The shipped server configuration parses, and a watcher's user can do
// what collab needs with it.
func TestDeployNATSConfig(t *testing.T) {
	t.Setenv("COLLAB_NATS_PASSWORD", "s3cret")
	opts, err := server.ProcessConfigFile("../../deploy/nats-server.conf")
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.StoreDir, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, t.TempDir(), true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server did not start")
	}
	defer s.Shutdown()
	env := map[string]string{"COLLAB_ROOT": newTree(t), "NATS_URL": s.ClientURL(), "NATS_USER": "collab", "NATS_PASSWORD": "s3cret"}
	if r := runCollab(t, env, "", "nats", "init"); r.code != 0 {
		t.Fatalf("init with the deploy config: exit %d %q", r.code, r.stderr)
	}
	if r := runCollab(t, env, "", "send", "--agent", "a", "--channel", "c", "hi"); r.code != 0 || strings.Contains(r.stderr, "files only") {
		t.Errorf("send: exit %d %q", r.code, r.stderr)
	}
	delete(env, "NATS_PASSWORD")
	delete(env, "NATS_USER")
	if r := runCollab(t, env, "", "send", "--agent", "a", "--channel", "c", "hi"); r.code != 1 || !strings.Contains(r.stderr, "authorization") {
		t.Errorf("send without credentials: exit %d %q; want 1 and an authorization error", r.code, r.stderr)
	}
}
