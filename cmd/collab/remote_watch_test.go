package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/remotewatch"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/randhex"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/bindfstest"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/presence"
)

// remoteWatchSetup is a "mounted host" (two bindfs mounts of one tree: the
// bridge runs on one, a mounted watcher and the test's writers use the
// other), an embedded NATS server with the CHAT stream, and keys for
// agents that the tree trusts.
type remoteWatchSetup struct {
	backing string
	bridged tree.Root // the bridge's mount
	mount   tree.Root // the mounted watcher's and the writers' mount
	url     string
	keys    map[string]string // agent: private key file
}

func newRemoteWatchSetup(t *testing.T, agents ...string) *remoteWatchSetup {
	t.Helper()
	s := &remoteWatchSetup{backing: newTree(t), url: natstest.Start(t, true, nil).URL(), keys: map[string]string{}}
	s.bridged = tree.Root(bindfstest.Mount(t, s.backing))
	s.mount = tree.Root(bindfstest.Mount(t, s.backing))
	if err := os.MkdirAll(s.mount.Channel("dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"COLLAB_ROOT": string(s.bridged), "NATS_URL": s.url}
	if r := runCollab(t, env, "", "nats", "init"); r.code != 0 {
		t.Fatalf("nats init: %d %s", r.code, r.stderr)
	}
	for _, a := range agents {
		_, s.keys[a] = trustKeyFile(t, tree.Root(s.backing), a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() { done <- runCollabCtx(t, ctx, env, "", "bridge", "--log-level", "warn") }()
	t.Cleanup(func() {
		cancel()
		if r := <-done; r.code != 0 {
			t.Errorf("bridge: exit %d %s", r.code, r.stderr)
		}
	})
	return s
}

// startRemote runs the test binary as `collab watch --remote` for agent on
// dev with the fake CLI, --root a folder that does not exist and its own
// state dir, and waits until its presence, written through the bridge,
// is on the mount with its PID.
func (s *remoteWatchSetup) startRemote(t *testing.T, agent, state string, env []string, flags ...string) *watcherProc {
	t.Helper()
	absent := filepath.Join(t.TempDir(), "no-such-mount")
	t.Cleanup(func() {
		if _, err := os.Stat(absent); err == nil {
			t.Errorf("the remote watcher made its --root %s", absent)
		}
	})
	return launchWatch(t, os.Args[0], s.mount, agent, append([]string{"NATS_URL=" + s.url, "COLLAB_KEY=" + s.keys[agent]}, env...),
		append([]string{"--remote", "--root", absent, "--agent", agent, "--channel", "dev", "--cli", "command", "--cmd", os.Args[0],
			"--state-dir", state, "--rate", "1000"}, flags...)...)
}

// foreignPost writes a message into dev on the mount as a foreign script
// would: python3, a temp file and a no-replace link, no collab code and
// nothing published to NATS.
func (s *remoteWatchSetup) foreignPost(t *testing.T, from, to, text string) string {
	t.Helper()
	now := time.Now().UTC()
	m := channel.Message{ID: channel.NewID(from, now, randhex.String(2)), Timestamp: now.Format(channel.TimeFormat),
		SessionID: "dev", From: from, To: to, Type: "chat", Content: channel.Content{Text: text}}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	const script = `import os, sys
d, name, data = sys.argv[1], sys.argv[2], sys.argv[3].encode()
tmp = os.path.join(d, "." + name + ".tmp")
with open(tmp, "wb") as f:
    f.write(data)
    f.flush()
    os.fsync(f.fileno())
os.link(tmp, os.path.join(d, name))
os.unlink(tmp)
`
	out, err := exec.Command("python3", "-c", script, s.mount.Channel("dev"), m.ID+".json", string(data)).CombinedOutput()
	if err != nil {
		t.Fatalf("python writer: %v %s", err, out)
	}
	return m.ID
}

// repliesOnMount returns agent's replies in dev on the mount, by the
// message they answer.
func (s *remoteWatchSetup) repliesOnMount(t *testing.T, agent string) map[string][]string {
	t.Helper()
	return replies(t, string(s.mount), "dev", agent)
}

// answeredOnce waits until each id has a reply by agent on the mount, then
// checks that none has two.
func (s *remoteWatchSetup) answeredOnce(t *testing.T, agent string, ids []string) map[string][]string {
	t.Helper()
	waitFor(t, func() bool {
		got := s.repliesOnMount(t, agent)
		for _, id := range ids {
			if len(got[id]) == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second) // a second reply would come now
	got := s.repliesOnMount(t, agent)
	for _, id := range ids {
		if len(got[id]) != 1 {
			t.Errorf("message %s: %d replies by %s on the mount (%v), want 1", id, len(got[id]), agent, got[id])
		}
	}
	return got
}

func requireRemoteE2E(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 (the foreign writer) not found")
	}
}

// TestRemoteWatchForeignWriter: a message to a remote agent written by a
// foreign python script on the mount gets exactly one reply on the mount,
// signed by the remote agent; `collab who` on the mount shows the remote
// agent with its host.
func TestRemoteWatchForeignWriter(t *testing.T) {
	t.Parallel() // mostly waiting on other processes and mounts
	requireRemoteE2E(t)
	s := newRemoteWatchSetup(t, "yves")
	s.startRemote(t, "yves", filepath.Join(t.TempDir(), "state"), nil)
	id := s.foreignPost(t, "human", "yves", "hello from a script")
	got := s.answeredOnce(t, "yves", []string{id})
	m, err := channel.Lookup(s.mount, "dev", got[id][0])
	if err != nil {
		t.Fatal(err)
	}
	v := signing.NewVerifier(keyring.Open(s.mount.Keys()))
	if m.Content.Text != "ok "+id || m.To != "human" || m.Verify(v, "dev") != signing.Verified {
		t.Errorf("reply %q to %s: %v, want ok %s, verified", m.Content.Text, m.To, m.Verify(v, "dev"), id)
	}

	// who on the mount: the remote agent, awake, with this host.
	env := map[string]string{"COLLAB_ROOT": string(s.mount)}
	r := runCollab(t, env, "", "who", "--json")
	var who []struct{ Agent, State, Host, Verdict string }
	if err := json.Unmarshal([]byte(r.stdout), &who); r.code != 0 || err != nil {
		t.Fatalf("who --json: exit %d %q %q (%v)", r.code, r.stdout, r.stderr, err)
	}
	host, _ := os.Hostname()
	found := false
	for _, e := range who {
		if e.Agent == "yves" {
			found = true
			if !strings.HasPrefix(e.State, "AWAKE") || e.Host != host || e.Verdict != "verified" {
				t.Errorf("who: %+v, want yves AWAKE on %s, verified", e, host)
			}
		}
	}
	if !found {
		t.Errorf("who on the mount does not show yves: %q", r.stdout)
	}
}

// TestRemoteWatchMixedWatchers: with a mounted and a remote watcher of one
// agent, 20 messages get exactly one reply each.
func TestRemoteWatchMixedWatchers(t *testing.T) {
	t.Parallel() // mostly waiting on other processes and mounts
	requireRemoteE2E(t)
	s := newRemoteWatchSetup(t, "xena")
	startWatcher(t, string(s.mount), "xena", "dev", []string{"COLLAB_KEY=" + s.keys["xena"]}, "--rate", "1000", "--allow-writable-keyring")
	s.startRemote(t, "xena", filepath.Join(t.TempDir(), "state"), nil)
	var ids []string
	for i := range 20 {
		ids = append(ids, s.foreignPost(t, "human", "xena", fmt.Sprint("message ", i)))
	}
	s.answeredOnce(t, "xena", ids)
}

// TestRemoteWatchKilledMidJob: a remote watcher SIGKILLed while its CLI
// runs, then restarted on the same state: no message lost, none answered
// twice.
func TestRemoteWatchKilledMidJob(t *testing.T) {
	t.Parallel() // mostly waiting on other processes and mounts
	requireRemoteE2E(t)
	s := newRemoteWatchSetup(t, "yves")
	state := filepath.Join(t.TempDir(), "state")
	started := t.TempDir()
	slow := []string{"FAKE_CLI_SLEEP=3s", "FAKE_CLI_STARTED=" + started}
	w := s.startRemote(t, "yves", state, slow)
	var ids []string
	for i := range 3 {
		ids = append(ids, s.foreignPost(t, "human", "yves", fmt.Sprint("slow ", i)))
	}
	waitFor(t, func() bool { ents, _ := os.ReadDir(started); return len(ents) > 0 })
	w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
	w.done <- nil // for the clean-up
	s.startRemote(t, "yves", state, slow, "--claim-grace", "3s")
	s.answeredOnce(t, "yves", ids)
}

// TestRemoteWatchCatchUp: a remote watcher offline while 50 messages
// arrive answers each once when it comes back.
func TestRemoteWatchCatchUp(t *testing.T) {
	t.Parallel() // mostly waiting on other processes and mounts
	requireRemoteE2E(t)
	s := newRemoteWatchSetup(t, "yves")
	state := filepath.Join(t.TempDir(), "state")
	w := s.startRemote(t, "yves", state, nil)
	first := s.foreignPost(t, "human", "yves", "before")
	s.answeredOnce(t, "yves", []string{first})
	if err := w.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	var ids []string
	for i := range 50 {
		ids = append(ids, s.foreignPost(t, "human", "yves", fmt.Sprint("while away ", i)))
	}
	s.startRemote(t, "yves", state, nil)
	s.answeredOnce(t, "yves", append(ids, first))
}

// TestRemoteWatchRefusals: watch --remote without the agent's key, without
// a NATS server or with --mcp for a CLI without MCP is refused at once
// (exit 2), before it
// writes any state or touches --root.
func TestRemoteWatchRefusals(t *testing.T) {
	absent := filepath.Join(t.TempDir(), "no-such-mount")
	state := filepath.Join(t.TempDir(), "state")
	keyPath := filepath.Join(t.TempDir(), "yves.key")
	if _, err := signing.NewKey(keyPath, "yves", false); err != nil {
		t.Fatal(err)
	}
	base := []string{"watch", "--remote", "--root", absent, "--state-dir", state, "--agent", "yves",
		"--channel", "dev", "--cli", "command", "--cmd", os.Args[0]}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"no key", map[string]string{"NATS_URL": "nats://127.0.0.1:1", "XDG_CONFIG_HOME": t.TempDir()}, nil, "needs a signing key"},
		{"no NATS", map[string]string{"COLLAB_KEY": keyPath}, nil, "no NATS server"},
		{"mcp", map[string]string{"COLLAB_KEY": keyPath, "NATS_URL": "nats://127.0.0.1:1"}, []string{"--mcp"}, "--mcp needs --cli claude or codex, not command"},
		{"no channel", map[string]string{"COLLAB_KEY": keyPath, "NATS_URL": "nats://127.0.0.1:1"}, []string{"--channel", "../x"}, "channel"},
	} {
		args := append(append([]string{}, base...), c.args...)
		if c.name == "no channel" {
			args = []string{"watch", "--remote", "--root", absent, "--state-dir", state, "--agent", "yves", "--cli", "command", "--cmd", os.Args[0], "--channel", "../x"}
		}
		r := runCollab(t, c.env, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d, %q; want 2 and %q", c.name, r.code, r.stderr, c.want)
		}
	}
	for _, p := range []string{absent, state} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s written", p)
		}
	}
}

// TestRemoteWatchWiring: watch --remote, with a stand-in for the mirror
// (a local tree the test writes into), starts the mirror before the
// watcher, runs the watcher on the mirror's tree with its claims made on
// the mount through a bridge, and stops the mirror only after the
// watcher has stopped. Not parallel: it replaces startMirror and sets the
// fake CLI's variable.
func TestRemoteWatchWiring(t *testing.T) {
	s := newRemoteSetup(t) // a mount, NATS with CHAT, agent rem's key trusted
	startBridge(t, s.root, s.url)
	mirrorRoot := tree.Root(filepath.Join(t.TempDir(), "tree"))
	if err := os.MkdirAll(mirrorRoot.Channel("dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	type event struct {
		what  string
		state string // the watcher's presence in the mirror then
	}
	events := make(chan event, 4)
	stateOf := func() string {
		p, err := presence.Read(mirrorRoot, "rem")
		if err != nil {
			return "none"
		}
		return p.State
	}
	old := startMirror
	t.Cleanup(func() { startMirror = old })
	startMirror = func(ctx context.Context, c *remote.Client, st watchSettings, state string, _ *slog.Logger) (*remotewatch.Mirror, error) {
		if c.Agent() != "rem" || state != s.state || len(st.Channels) != 1 || st.Channels[0] != "dev" {
			t.Errorf("mirror started for %s, state %s, channels %v", c.Agent(), state, st.Channels)
		}
		events <- event{"started", stateOf()}
		return &remotewatch.Mirror{Root: mirrorRoot, Stop: func() { events <- event{"stopped", stateOf()} }}, nil
	}
	t.Setenv("COLLAB_TEST_AS", "cli") // the CLI the watcher runs: this binary, the fake

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	stderr := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("watch --remote log:\n%s", stderr.String())
		}
	})
	go func() {
		err := run(ctx, []string{"watch", "--agent", "rem", "--channel", "dev", "--cli", "command", "--cmd", os.Args[0],
			"--poll", "100ms", "--heartbeat", "1s", "--grace", "2s"}, func(k string) string { return s.env[k] }, strings.NewReader(""), &syncBuffer{}, stderr)
		done <- result{code: exitCode(err, stderr), stderr: stderr.String()}
	}()
	if e := <-events; e.what != "started" || e.state != "none" {
		t.Fatalf("first event %+v, want the mirror started before the watcher", e)
	}
	waitFor(t, func() bool { return stateOf() == presence.StateAwake }) // a first start answers from now on
	m := post(t, string(mirrorRoot), "dev", "human", "rem", "hello", time.Now())
	var reply string
	waitFor(t, func() bool {
		got := replies(t, string(mirrorRoot), "dev", "rem")[m.ID]
		if len(got) == 1 {
			reply = got[0]
		}
		return reply != ""
	})
	onMount := &claim.Store{Root: s.root, Self: claim.Owner{Agent: "rem"}}
	waitFor(t, func() bool { c, err := onMount.Read("dev", m.ID); return err == nil && c.Status == claim.Replied })
	c, _ := onMount.Read("dev", m.ID)
	host, _ := os.Hostname()
	if c.Reply != reply || c.Owner.Host != host {
		t.Errorf("claim on the mount: %+v, want replied with %s by this host %s", c, reply, host)
	}
	// Claims, reply tokens and seen files are on the mount, none in the
	// mirror.
	if ents, _ := os.ReadDir(mirrorRoot.AgentClaims("dev", "rem")); len(ents) > 0 {
		t.Errorf("claims folder files in the mirror: %v", ents)
	}
	if sf, err := delivery.ReadSeen(s.root, "dev", "rem", m.ID); err != nil || sf.Host != host {
		t.Errorf("seen file on the mount: %+v, %v", sf, err)
	}
	cancel()
	if e := <-events; e.what != "stopped" || e.state != presence.StateOffline {
		t.Errorf("event %+v, want the mirror stopped after the watcher wrote OFFLINE", e)
	}
	if r := <-done; r.code != 0 {
		t.Errorf("watch --remote: exit %d %s", r.code, r.stderr)
	}
	s.noRootTouched(t)
}

// TestRemoteWatchMirrorFails: a mirror that stops on its own stops the
// watcher (it would answer blind), and watch --remote fails saying so.
func TestRemoteWatchMirrorFails(t *testing.T) {
	s := newRemoteSetup(t)
	mirrorRoot := tree.Root(filepath.Join(t.TempDir(), "tree"))
	if err := os.MkdirAll(mirrorRoot.Channel("dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	old := startMirror
	t.Cleanup(func() { startMirror = old })
	ended := make(chan struct{})
	r := &remotewatch.Mirror{Root: mirrorRoot, Ended: ended, Stop: func() {}}
	startMirror = func(context.Context, *remote.Client, watchSettings, string, *slog.Logger) (*remotewatch.Mirror, error) {
		return r, nil
	}
	done := make(chan result, 1)
	go func() {
		done <- runCollab(t, s.env, "", "watch", "--agent", "rem", "--channel", "dev", "--cli", "command", "--cmd", os.Args[0],
			"--poll", "100ms", "--heartbeat", "1s", "--grace", "2s")
	}()
	waitFor(t, func() bool {
		p, err := presence.Read(mirrorRoot, "rem")
		return err == nil && p.State == presence.StateAwake
	})
	r.Err = errors.New("the stream is gone")
	close(ended)
	select {
	case res := <-done:
		if res.code != exitFailure || !strings.Contains(res.stderr, "mirror: the stream is gone") {
			t.Errorf("exit %d, %q; want 1 and the mirror's error", res.code, res.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the watcher runs on after its mirror stopped")
	}
	if p, err := presence.Read(mirrorRoot, "rem"); err != nil || p.State != presence.StateOffline {
		t.Errorf("presence %+v, %v; want OFFLINE", p, err)
	}
}
