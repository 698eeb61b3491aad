package main

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/presence"
)

// startBridge serves root's tree to the NATS server at url until the
// returned stop is called (or the test ends).
func startBridge(t *testing.T, root tree.Root, url string, opts ...nats.Option) (stop func()) {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := bridge.New(bridge.Config{Root: root, Verifier: signing.NewVerifier(keyring.Open(root.Keys())), Host: "mounted"})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, nc) }()
	// Serve has subscribed once the connection has a subscription and
	// the server has seen it (a flush).
	deadline := time.Now().Add(5 * time.Second)
	for nc.NumSubscriptions() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the bridge does not subscribe")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("bridge: %v", err)
		}
		nc.Close()
	}
	t.Cleanup(stop)
	return stop
}

// remoteSetup is a mounted tree with the CHAT stream, an embedded NATS
// server, and the environment of a remote agent "rem" whose key the tree
// trusts: its --root is a folder that does not exist.
type remoteSetup struct {
	root    tree.Root
	url     string
	env     map[string]string // rem's, remote
	mounted map[string]string // a mounted host's
	absent  string
	state   string
	keyPath string
}

func newRemoteSetup(t *testing.T) *remoteSetup {
	t.Helper()
	s := &remoteSetup{root: tree.Root(newTree(t)), url: natstest.Start(t, true, nil).URL()}
	s.mounted = map[string]string{"COLLAB_ROOT": string(s.root), "NATS_URL": s.url}
	if r := runCollab(t, s.mounted, "", "nats", "init"); r.code != 0 {
		t.Fatalf("nats init: %d %s", r.code, r.stderr)
	}
	_, s.keyPath = trustKeyFile(t, s.root, "rem")
	s.absent = filepath.Join(t.TempDir(), "no-such-mount")
	s.state = filepath.Join(t.TempDir(), "state")
	s.env = map[string]string{"COLLAB_ROOT": s.absent, "NATS_URL": s.url, "COLLAB_KEY": s.keyPath,
		"COLLAB_AGENT": "rem", "COLLAB_REMOTE": "1", "COLLAB_STATE_DIR": s.state}
	return s
}

// channelFiles returns the messages on the mount in ch.
func channelFiles(t *testing.T, root tree.Root, ch string) []channel.Message {
	t.Helper()
	msgs, _, err := channel.ReadAll(root, ch, channel.ReaderOptions{})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return msgs
}

func (s *remoteSetup) noRootTouched(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(s.absent); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the remote command touched --root %s: %v", s.absent, err)
	}
}

// TestRemoteSendOutbox: send --remote with no mount delivers a signed
// file; with the bridge down it exits 5 and keeps the message in the
// outbox, which outbox flush delivers exactly once when the bridge is up.
func TestRemoteSendOutbox(t *testing.T) {
	s := newRemoteSetup(t)
	v := signing.NewVerifier(keyring.Open(s.root.Keys()))

	// The bridge is down.
	r := runCollab(t, s.env, "", "send", "--channel", "dev", "--to", "b", "queued while down")
	if r.code != exitQueued || !strings.Contains(r.stderr, "kept in the outbox "+filepath.Join(s.state, "outbox")) || r.stdout != "" {
		t.Fatalf("send with the bridge down: exit %d, %q %q; want 5 and the outbox named", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, s.env, "", "outbox", "ls", "--json")
	var ls map[string][]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &ls); r.code != 0 || err != nil || len(ls["waiting"]) != 1 || len(ls["failed"]) != 0 {
		t.Fatalf("outbox ls: exit %d, %q (%v)", r.code, r.stdout, err)
	}
	if r = runCollab(t, s.env, "", "outbox", "flush"); r.code != exitQueued {
		t.Errorf("outbox flush with the bridge down: exit %d, %q; want 5", r.code, r.stderr)
	}
	// NATS itself cannot be reached: queued the same way.
	noNATS := maps.Clone(s.env)
	noNATS["NATS_URL"] = "nats://127.0.0.1:1"
	r = runCollab(t, noNATS, "", "send", "--channel", "dev", "queued without NATS")
	if r.code != exitQueued || !strings.Contains(r.stderr, "kept in the outbox") {
		t.Fatalf("send with NATS down: exit %d, %q; want 5", r.code, r.stderr)
	}
	if got := channelFiles(t, s.root, "dev"); len(got) != 0 {
		t.Fatalf("%d messages on the mount while the bridge is down", len(got))
	}

	startBridge(t, s.root, s.url)
	r = runCollab(t, s.env, "", "outbox", "flush")
	if r.code != 0 || !strings.Contains(r.stderr, "sent 2 queued write") {
		t.Fatalf("outbox flush: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if r = runCollab(t, s.env, "", "outbox", "flush"); r.code != 0 || strings.Contains(r.stderr, "sent") {
		t.Errorf("second flush: exit %d, %q", r.code, r.stderr)
	}
	got := channelFiles(t, s.root, "dev")
	if len(got) != 2 || got[0].Content.Text != "queued while down" || got[1].Content.Text != "queued without NATS" || got[0].From != "rem" {
		t.Fatalf("on the mount: %+v, want the queued messages once each, in order", got)
	}
	for _, m := range got {
		if verdict := m.Verify(v, "dev"); verdict != signing.Verified {
			t.Errorf("delivered message %s: %v, want verified", m.ID, verdict)
		}
	}

	// The bridge is up: sent at once, id printed.
	r = runCollab(t, s.env, "", "send", "--channel", "dev", "hello from afar")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("send --remote: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	m, err := channel.Lookup(s.root, "dev", id)
	if err != nil || m.Verify(v, "dev") != signing.Verified || m.Content.Text != "hello from afar" {
		t.Errorf("message %s on the mount: %+v, %v", id, m, err)
	}
	if got := channelFiles(t, s.root, "dev"); len(got) != 3 {
		t.Errorf("%d messages on the mount, want 3", len(got))
	}
	s.noRootTouched(t)
}

// TestRemoteNeedsKey: send --remote without a key is refused before
// anything is queued.
func TestRemoteNeedsKey(t *testing.T) {
	s := newRemoteSetup(t)
	delete(s.env, "COLLAB_KEY")
	s.env["XDG_CONFIG_HOME"] = t.TempDir() // no default key there
	r := runCollab(t, s.env, "", "send", "--channel", "dev", "hello")
	if r.code != exitFailure || !strings.Contains(r.stderr, "needs a signing key") {
		t.Errorf("send --remote without a key: exit %d, %q", r.code, r.stderr)
	}
	if _, err := os.Stat(s.state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state written: %v", err)
	}
	s.noRootTouched(t)
}

// TestRemoteReadWhoStatus: read --remote pages and follows, who --remote
// shows a presence written through the bridge, status --remote answers.
func TestRemoteReadWhoStatus(t *testing.T) {
	s := newRemoteSetup(t)
	startBridge(t, s.root, s.url)
	var ids []string
	for _, text := range []string{"one", "two", "three", "four", "five"} {
		r := runCollab(t, s.mounted, "", "send", "--agent", "m", "--channel", "dev", text)
		if r.code != 0 {
			t.Fatal(r.stderr)
		}
		ids = append(ids, strings.TrimSpace(r.stdout))
	}
	r := runCollab(t, s.env, "", "read", "--channel", "dev", "--limit", "2", "--json")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 2 || !strings.Contains(r.stdout, ids[3]) || !strings.Contains(r.stdout, ids[4]) {
		t.Errorf("read --remote --limit 2: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCollab(t, s.env, "", "read", "--channel", "dev", "--since", ids[1])
	if r.code != 0 || strings.Contains(r.stdout, "  two\n") || !strings.Contains(r.stdout, "  three\n") || !strings.Contains(r.stdout, "  five\n") {
		t.Errorf("read --remote --since: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}

	// Pages through the client: two at a time.
	signer, err := signing.LoadKey(s.keyPath, "rem")
	if err != nil {
		t.Fatal(err)
	}
	c, err := remote.Dial(t.Context(), natsbus.Options{URL: s.url}, remote.Config{Agent: "rem", Signer: signer, StateDir: s.state})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var paged []string
	for after, pages := ids[0], 0; ; pages++ {
		p, err := c.Read(t.Context(), "dev", after, 2)
		if err != nil || pages > 5 {
			t.Fatalf("page %d: %v", pages, err)
		}
		for _, m := range p.Messages {
			paged = append(paged, m.ID)
		}
		if !p.More {
			break
		}
		after = p.Last
	}
	if got, want := strings.Join(paged, " "), strings.Join(ids[1:], " "); got != want {
		t.Errorf("paged %s, want %s", got, want)
	}

	// who shows a presence written through the bridge, with its host.
	beat := presence.Status{State: presence.StateAwake, Substate: presence.SubIdle, Channel: "dev", Host: "laptop"}
	if err := c.Presence(t.Context(), beat); err != nil {
		t.Fatal(err)
	}
	r = runCollab(t, s.env, "", "who", "--json")
	var who []struct {
		Agent, State, Host, Verdict string
	}
	if err := json.Unmarshal([]byte(r.stdout), &who); r.code != 0 || err != nil || len(who) != 1 ||
		who[0].Agent != "rem" || who[0].Host != "laptop" || !strings.HasPrefix(who[0].State, "AWAKE") || who[0].Verdict != "verified" {
		t.Errorf("who --remote --json: exit %d, %q %q (%v)", r.code, r.stdout, r.stderr, err)
	}
	if r = runCollab(t, s.env, "", "who"); r.code != 0 || !strings.Contains(r.stdout, "laptop") {
		t.Errorf("who --remote: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}

	r = runCollab(t, s.env, "", "status", ids[0], "--json")
	if r.code != 0 || !strings.Contains(r.stdout, ids[0]) {
		t.Errorf("status --remote: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	missing := channel.NewID("m", time.Now(), "ffff")
	if r = runCollab(t, s.env, "", "status", missing); r.code != exitNothing {
		t.Errorf("status --remote of a missing message: exit %d, %q", r.code, r.stderr)
	}

	// --follow: what a mounted sender dual-writes to the stream appears.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		err := run(ctx, []string{"read", "--channel", "dev", "--limit", "1", "--follow"}, func(k string) string { return s.env[k] }, strings.NewReader(""), out, &syncBuffer{})
		done <- exitCode(err, &syncBuffer{})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "  five\n") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if r := runCollab(t, s.mounted, "", "send", "--agent", "m", "--channel", "dev", "six"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for !strings.Contains(out.String(), "  six\n") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 || strings.Count(out.String(), "  six\n") != 1 || strings.Count(out.String(), "  five\n") != 1 {
		t.Errorf("read --remote --follow: exit %d, %q", code, out.String())
	}
	s.noRootTouched(t)
}

// TestRemoteCannotPostAsAnother: the bridge refuses a message that is not
// the subject's agent's, or not signed by its key; the client moves such a
// write to failed/.
func TestRemoteCannotPostAsAnother(t *testing.T) {
	s := newRemoteSetup(t)
	startBridge(t, s.root, s.url)
	other, _ := trustKeyFile(t, s.root, "other")
	nc, err := nats.Connect(s.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	post := func(m *channel.Message, signer *signing.Signer) bridge.Reply {
		t.Helper()
		w := channel.Writer{Signer: signer}
		data, err := w.Seal(m)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := json.Marshal(bridge.PostRequest{Channel: "dev", Message: data})
		msg, err := nc.Request(bridge.RequestSubject(bridge.OpPost, "rem"), body, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var r bridge.Reply
		if err := json.Unmarshal(msg.Data, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for name, tc := range map[string]struct {
		from   string
		signer *signing.Signer
	}{
		"as another, signed by it": {"other", other},
		"unsigned":                 {"rem", nil},
	} {
		r := post(&channel.Message{SessionID: "dev", From: tc.from, Content: channel.Content{Text: name}}, tc.signer)
		if r.OK || r.Code != bridge.CodeForbidden {
			t.Errorf("%s on rem's subject: %+v, want forbidden", name, r)
		}
	}
	// A client whose key the tree does not trust: refused, kept in failed/.
	keyPath := filepath.Join(t.TempDir(), "stranger.key")
	if _, err := signing.NewKey(keyPath, "stranger", false); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"NATS_URL": s.url, "COLLAB_KEY": keyPath, "COLLAB_AGENT": "stranger",
		"COLLAB_REMOTE": "1", "COLLAB_STATE_DIR": s.state, "COLLAB_ROOT": s.absent}
	r := runCollab(t, env, "", "send", "--channel", "dev", "who am I")
	if r.code != exitFailure || !strings.Contains(r.stderr, "forbidden") || !strings.Contains(r.stderr, "failed") {
		t.Errorf("send with an untrusted key: exit %d, %q", r.code, r.stderr)
	}
	if r = runCollab(t, env, "", "outbox", "ls"); !strings.Contains(r.stdout, "failed  post  dev ") {
		t.Errorf("outbox ls: %q", r.stdout)
	}
	if got := channelFiles(t, s.root, "dev"); len(got) != 0 {
		t.Errorf("%d messages on the mount, want none", len(got))
	}
}

// TestRemoteScopedUser: with deploy/nats/accounts.conf, the remote agent's
// own user in its own account (its subjects, its inbox prefix, the
// stream's info and direct gets imported from the team's account) is
// enough for send, read --follow, who and status --remote.
func TestRemoteScopedUser(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte(natstest.AccountsConf(t, "rem")), 0o600); err != nil {
		t.Fatal(err)
	}
	parsed, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("accounts.conf: %v", err)
	}
	url := natstest.Start(t, true, func(o *server.Options) {
		o.Accounts, o.Users, o.Nkeys = parsed.Accounts, parsed.Users, parsed.Nkeys
	}).URL()
	root := tree.Root(newTree(t))
	mounted := map[string]string{"COLLAB_ROOT": string(root), "NATS_URL": url, "NATS_USER": "collab", "NATS_PASSWORD": "pw-collab"}
	if r := runCollab(t, mounted, "", "nats", "init"); r.code != 0 {
		t.Fatalf("nats init: %d %s", r.code, r.stderr)
	}
	_, keyPath := trustKeyFile(t, root, "rem")
	absent := filepath.Join(t.TempDir(), "no-such-mount")
	env := map[string]string{"COLLAB_ROOT": absent, "NATS_URL": url, "NATS_USER": "remote-rem", "NATS_PASSWORD": "pw-remote-rem",
		"COLLAB_KEY": keyPath, "COLLAB_AGENT": "rem", "COLLAB_REMOTE": "1", "COLLAB_STATE_DIR": filepath.Join(t.TempDir(), "state")}
	startBridge(t, root, url, nats.UserInfo("bridge", "pw-bridge"))

	r := runCollab(t, env, "", "send", "--channel", "dev", "scoped hello")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("send --remote as remote-rem: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if _, err := channel.Lookup(root, "dev", id); err != nil {
		t.Fatal(err)
	}
	if r = runCollab(t, env, "", "status", id); r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Errorf("status --remote: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if r = runCollab(t, env, "", "who", "--json"); r.code != 0 {
		t.Errorf("who --remote: exit %d, %q", r.code, r.stderr)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out, errb := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		err := run(ctx, []string{"read", "--channel", "dev", "--follow"}, func(k string) string { return env[k] }, strings.NewReader(""), out, errb)
		done <- exitCode(err, errb)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "  scoped hello\n") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if r := runCollab(t, mounted, "", "send", "--agent", "m", "--channel", "dev", "from the mount"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	for !strings.Contains(out.String(), "  from the mount\n") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 || !strings.Contains(out.String(), "  from the mount\n") {
		t.Errorf("read --remote --follow as remote-rem: exit %d, %q %q", code, out.String(), errb.String())
	}
	if _, err := os.Stat(absent); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--root touched: %v", err)
	}
}
