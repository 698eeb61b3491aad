package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/testsupport/syncbuf"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/presence"
)

// logBuf is a slog handler's output a test reads.
type logBuf = syncbuf.Buffer

// mount is a tree on the local disk standing for the mount, with a bridge
// and its stream publisher on an embedded JetStream server; alice (the
// remote agent) and bob are trusted in its keyring.
type mount struct {
	root   tree.Root
	url    string
	srv    *natstest.Server
	bus    *natsbus.Bus
	keys   map[string]*signing.Signer
	stray  *signing.Signer // bob's name, a key nobody trusts
	remote natsbus.Options // how alice's host connects
}

func newMount(t testing.TB) *mount { return newMountAs(t, false) }

// newMountAs: with accounts, the server has deploy/nats/accounts.conf's
// accounts (alice a remote agent, in her account REMOTE-alice), the bridge
// connects as "bridge", and newRemote as "remote-alice".
func newMountAs(t testing.TB, accounts bool) *mount {
	t.Helper()
	m := &mount{root: tree.Root(t.TempDir()), keys: map[string]*signing.Signer{}}
	var mutate func(*server.Options)
	var bridgeUser natsbus.Options
	if accounts {
		path := filepath.Join(t.TempDir(), "nats.conf")
		if err := os.WriteFile(path, []byte(natstest.AccountsConf(t, "alice")), 0o600); err != nil {
			t.Fatal(err)
		}
		parsed, err := server.ProcessConfigFile(path)
		if err != nil {
			t.Fatalf("accounts.conf: %v", err)
		}
		mutate = func(o *server.Options) { o.Accounts, o.Users, o.Nkeys = parsed.Accounts, parsed.Users, parsed.Nkeys }
		bridgeUser = natsbus.Options{User: "bridge", Password: "pw-bridge"}
		m.remote = natsbus.Options{User: "remote-alice", Password: "pw-remote-alice"}
	}
	m.srv = natstest.Start(t, true, mutate)
	m.url = m.srv.URL()
	bridgeUser.URL, m.remote.URL = m.url, m.url
	for _, dir := range []string{m.root.Channel("dev"), m.root.Jobs("alice")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ring := keyring.Open(m.root.Keys())
	for _, a := range []string{"alice", "bob"} {
		k, err := signing.NewKey(filepath.Join(t.TempDir(), a+".key"), a, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := ring.Trust(a, k.PublicKey()); err != nil {
			t.Fatal(err)
		}
		m.keys[a] = k
	}
	stray, err := signing.NewKey(filepath.Join(t.TempDir(), "stray.key"), "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	m.stray = stray
	ctx, cancel := context.WithCancel(context.Background())
	b, err := natsbus.Connect(ctx, bridgeUser)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	m.bus = b
	nc, err := nats.Connect(m.url, nats.UserInfo(bridgeUser.User, bridgeUser.Password))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	srv := bridge.New(bridge.Config{Root: m.root, Verifier: signing.NewVerifier(ring), Logger: quiet})
	pub := &bridge.Publisher{Root: m.root, Stream: b, StateFile: bridge.StatePath(m.root, "h"), Poll: 50 * time.Millisecond, Logger: quiet}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = srv.Serve(ctx, nc) }()
	go func() { defer wg.Done(); _ = pub.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait(); nc.Close(); b.Close() })
	for nc.NumSubscriptions() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return m
}

// post writes a message of from in dev on the mount, signed by its key.
func (m *mount) post(t testing.TB, from, text string) channel.Message {
	t.Helper()
	msg := channel.Message{SessionID: "dev", From: from, To: "alice", Content: channel.Content{Text: text}}
	w := channel.Writer{Root: m.root, Signer: m.keys[from]}
	if err := w.Post(&msg); err != nil {
		t.Fatal(err)
	}
	return msg
}

// remoteHost is alice's state folder with a client; start runs a mirror.
type remoteHost struct {
	state  string
	client *Client
	log    *logBuf
}

func newRemote(t testing.TB, m *mount) *remoteHost {
	t.Helper()
	h := &remoteHost{state: t.TempDir(), log: &logBuf{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, m.remote, Config{
		Agent: "alice", Signer: m.keys["alice"], StateDir: h.state,
		Logger: slog.New(slog.NewTextHandler(h.log, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("alice's log:\n%s", h.log)
		}
	})
	h.client = c
	return h
}

func (h *remoteHost) dir() string { return filepath.Join(h.state, "tree") }

func (h *remoteHost) root() tree.Root { return tree.Root(h.dir()) }

// start runs a mirror of dev; stop cancels it and returns Run's error.
func (h *remoteHost) start(t testing.TB) (stop func() error) {
	t.Helper()
	return h.startOn(t, "dev")
}

// startOn runs a mirror of channels.
func (h *remoteHost) startOn(t testing.TB, channels ...string) (stop func() error) {
	t.Helper()
	mr, err := NewMirror(MirrorConfig{Client: h.client, Channels: channels, Dir: h.dir(), Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if mr.Root() != h.root() {
		t.Fatalf("root %s", mr.Root())
	}
	if err := os.MkdirAll(h.dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mr.Run(ctx) }()
	var once sync.Once
	var rerr error
	stop = func() error {
		once.Do(func() { cancel(); rerr = <-done })
		return rerr
	}
	t.Cleanup(func() { _ = stop() })
	select {
	case <-mr.CaughtUp():
	case err := <-done:
		t.Fatalf("the mirror stopped before it caught up: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the mirror never caught up")
	}
	if readFile(filepath.Join(h.root().Keys(), "alice.json")) == nil {
		t.Fatal("caught up without the keyring")
	}
	return stop
}

// eventually waits for cond, failing with what after a generous bound.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readFile(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

func fileCount(t testing.TB, dir, prefix string) int {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, de := range des {
		if name := de.Name(); strings.HasPrefix(name, prefix) && strings.HasSuffix(name, ".json") {
			n++
		}
	}
	return n
}

// TestMirrorIn: a signed message on the mount appears in the mirror with
// the bytes of its file; a foreign writer's file (no id, no signature)
// with the bytes the bridge published (its file as the decoder reads it);
// the keyring is mirrored.
func TestMirrorIn(t *testing.T) {
	m := newMount(t)
	h := newRemote(t, m)
	h.start(t)
	signed := m.post(t, "bob", "hello alice")
	id := channel.NewID("py", time.Now(), "0001")
	foreign := []byte(`{"from": "py", "to": "alice", "content": {"text": "from python"}}`)
	if err := os.WriteFile(filepath.Join(string(m.root.Channel("dev")), id+".json"), foreign, 0o644); err != nil {
		t.Fatal(err)
	}
	mirrored := func(id string) []byte { return readFile(filepath.Join(h.root().Channel("dev"), id+".json")) }
	eventually(t, "both messages mirrored", func() bool { return mirrored(signed.ID) != nil && mirrored(id) != nil })
	if want := readFile(filepath.Join(m.root.Channel("dev"), signed.ID+".json")); !bytes.Equal(mirrored(signed.ID), want) {
		t.Fatalf("signed message:\nmirror %s\nmount  %s", mirrored(signed.ID), want)
	}
	fm, err := channel.Decode(foreign, id+".json", "dev")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := fm.Encode()
	if got := mirrored(id); !bytes.Equal(got, want) {
		t.Fatalf("foreign message:\nmirror %s\nwant   %s", got, want)
	}
	eventually(t, "keyring mirrored", func() bool { return readFile(filepath.Join(h.root().Keys(), "bob.json")) != nil })
	v := signing.NewVerifier(keyring.Open(h.root().Keys()))
	got, err := channel.Decode(mirrored(signed.ID), signed.ID+".json", "dev")
	if err != nil || got.Verify(v, "dev") != signing.Verified {
		t.Fatalf("the mirrored message does not verify with the mirrored keyring: %v", err)
	}
}

// TestMirrorRestart: a mirror stopped (its context cancelled, messages in
// flight) and started again loses nothing and has each message once.
func TestMirrorRestart(t *testing.T) {
	m := newMount(t)
	h := newRemote(t, m)
	stop := h.start(t)
	var ids []string
	for i := range 20 {
		ids = append(ids, m.post(t, "bob", fmt.Sprintf("first %d", i)).ID)
	}
	eventually(t, "some mirrored", func() bool { return fileCount(t, h.root().Channel("dev"), "msg-") > 0 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		ids = append(ids, m.post(t, "bob", fmt.Sprintf("second %d", i)).ID)
	}
	h.start(t)
	eventually(t, "all 40 mirrored", func() bool { return fileCount(t, h.root().Channel("dev"), "msg-") == 40 })
	for _, id := range ids {
		if readFile(filepath.Join(h.root().Channel("dev"), id+".json")) == nil {
			t.Fatalf("%s lost", id)
		}
	}
	time.Sleep(200 * time.Millisecond) // redeliveries, if any, come as the same names
	if n := fileCount(t, h.root().Channel("dev"), "msg-"); n != 40 {
		t.Fatalf("%d files for 40 messages", n)
	}
}

// TestMirrorGap: messages the stream dropped (purged: its retention)
// while the mirror was stopped are caught up from the files, and the log
// says so.
func TestMirrorGap(t *testing.T) {
	m := newMount(t)
	h := newRemote(t, m)
	stop := h.start(t)
	first := m.post(t, "bob", "before")
	eventually(t, "first mirrored", func() bool { return readFile(filepath.Join(h.root().Channel("dev"), first.ID+".json")) != nil })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 5 {
		ids = append(ids, m.post(t, "bob", fmt.Sprintf("while away %d", i)).ID)
	}
	// The agent's own reply, newer than what the mirror missed, written
	// in the mirror meanwhile: the catch-up must not start after it.
	reply := channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: "late"}}
	later := func() time.Time { return time.Now().Add(5 * time.Second) }
	if err := (&channel.Writer{Root: h.root(), Signer: m.keys["alice"], Now: later}).Post(&reply); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(m.bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := js.Stream(ctx, natsbus.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "published", func() bool {
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs >= 6
	})
	if err := s.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	h.start(t)
	eventually(t, "caught up", func() bool { return fileCount(t, h.root().Channel("dev"), "msg-") == 7 })
	eventually(t, "the reply on the mount", func() bool { return fileCount(t, m.root.Channel("dev"), "msg-") == 7 })
	for _, id := range ids {
		if readFile(filepath.Join(h.root().Channel("dev"), id+".json")) == nil {
			t.Fatalf("%s lost", id)
		}
	}
	if log := h.log.String(); strings.Count(log, "the stream no longer holds messages since") != 1 {
		t.Fatalf("the log does not say it once:\n%s", log)
	}
}

// TestMirrorChannelAdded: a mirror restarted with a channel it did not
// have takes that channel's recent history from the files, and what came
// in its old channel meanwhile from the stream; the position is the
// mirror's own (no durable consumer on the server).
func TestMirrorChannelAdded(t *testing.T) {
	m := newMount(t)
	h := newRemote(t, m)
	js, err := jetstream.New(m.bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(context.Background(), natsbus.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	// In the stream before the mirror's position: only the files have it
	// for a mirror that did not follow ops.
	ops := channel.Message{SessionID: "ops", From: "bob", To: "alice", Content: channel.Content{Text: "in ops"}}
	if err := (&channel.Writer{Root: m.root, Signer: m.keys["bob"]}).Post(&ops); err != nil {
		t.Fatal(err)
	}
	eventually(t, "published", func() bool {
		info, err := s.Info(context.Background())
		return err == nil && info.State.Msgs == 1
	})
	stop := h.start(t)
	first := m.post(t, "bob", "in dev")
	eventually(t, "mirrored", func() bool { return readFile(filepath.Join(h.root().Channel("dev"), first.ID+".json")) != nil })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	dev := m.post(t, "bob", "in dev while away")
	h.startOn(t, "dev", "ops")
	eventually(t, "both mirrored", func() bool {
		return readFile(filepath.Join(h.root().Channel("ops"), ops.ID+".json")) != nil &&
			readFile(filepath.Join(h.root().Channel("dev"), dev.ID+".json")) != nil
	})
	for info := range s.ListConsumers(context.Background()).Info() {
		if info.Config.Durable != "" {
			t.Errorf("a durable consumer on the stream: %s", info.Config.Durable)
		}
	}
}

// TestMirrorOut: a reply the agent's watcher writes in the mirror reaches
// the mount once, signed, also after a restart; its presence reaches the
// mount. (Seen files go through the watcher's claims opener, not here.)
func TestMirrorOut(t *testing.T) {
	m := newMount(t)
	h := newRemote(t, m)
	stop := h.start(t)
	in := m.post(t, "bob", "a question")
	eventually(t, "question mirrored", func() bool { return readFile(filepath.Join(h.root().Channel("dev"), in.ID+".json")) != nil })
	reply := channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: "an answer"},
		Metadata: channel.Metadata{InReplyTo: in.ID}}
	w := channel.Writer{Root: h.root(), Signer: m.keys["alice"]}
	if err := w.Post(&reply); err != nil {
		t.Fatal(err)
	}
	onMount := filepath.Join(m.root.Channel("dev"), reply.ID+".json")
	eventually(t, "reply on the mount", func() bool { return readFile(onMount) != nil })
	got, err := channel.Decode(readFile(onMount), reply.ID+".json", "dev")
	if err != nil {
		t.Fatal(err)
	}
	if v := got.Verify(signing.NewVerifier(keyring.Open(m.root.Keys())), "dev"); v != signing.Verified {
		t.Fatalf("the reply on the mount: %v", v)
	}
	st := presence.Status{AgentID: "alice", State: presence.StateAwake, Substate: presence.SubIdle, Host: "laptop", Channel: "dev"}
	st.Sign(m.keys["alice"])
	if err := presence.Write(h.root(), st); err != nil {
		t.Fatal(err)
	}
	pre := filepath.Join(m.root.Presence(), "alice.json")
	eventually(t, "presence on the mount", func() bool {
		return bytes.Equal(readFile(pre), readFile(filepath.Join(h.root().Presence(), "alice.json")))
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	h.start(t)
	time.Sleep(300 * time.Millisecond)
	if n := fileCount(t, m.root.Channel("dev"), "msg-"); n != 2 {
		t.Fatalf("%d messages on the mount, want the question and one reply", n)
	}
	if out, _ := h.client.Outbox(); len(out) != 0 {
		t.Fatalf("outbox left: %v", out)
	}
}

// TestMirrorKills: a kill request for the agent's running job signed by
// its requester reaches the mirror's kill folder; a forged one does not.
func TestMirrorKills(t *testing.T) {
	m := newMount(t)
	h := newRemote(t, m)
	good, forged := jobs.NewID(), jobs.NewID()
	jdir := h.root().Jobs("alice")
	if err := os.MkdirAll(jdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{good, forged} {
		if err := os.WriteFile(filepath.Join(jdir, id+".json"), []byte(`{}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := jobs.RequestKill(m.root, "alice", forged, "bob", m.stray); err != nil {
		t.Fatal(err)
	}
	if err := jobs.RequestKill(m.root, "alice", good, "bob", m.keys["bob"]); err != nil {
		t.Fatal(err)
	}
	h.start(t)
	eventually(t, "the signed kill mirrored", func() bool { return jobs.KillRequested(h.root(), "alice", good) })
	eventually(t, "the forged kill refused", func() bool { return strings.Contains(h.log.String(), "a kill request not written") })
	if jobs.KillRequested(h.root(), "alice", forged) {
		t.Fatal("a forged kill request was written")
	}
}

// FuzzMirrorPut: whatever a stream message holds, the mirror writes only
// a message file under a valid name that decodes in its channel.
func FuzzMirrorPut(f *testing.F) {
	f.Add("dev", channel.NewID("a", time.Unix(1e9, 0), "0001"), []byte(`{"from":"a","content":{"text":"x"}}`))
	f.Add("dev", "../x", []byte(`{"from":"a","content":{"text":"x"}}`))
	f.Add("..", channel.NewID("a", time.Unix(1e9, 0), "0001"), []byte(`{"from":"a","session_id":"ops","content":{"text":"x"}}`))
	mr := offlineMirror(f, f.TempDir())
	f.Fuzz(func(t *testing.T, ch, id string, data []byte) {
		b := dirBatch{root: mr.Root()}
		wrote, err := mr.put(&b, ch, id, data)
		if serr := b.sync(); serr != nil {
			t.Fatalf("sync: %v", serr)
		}
		if err != nil || !wrote {
			return
		}
		got := readFile(filepath.Join(mr.Root().Channel(ch), id+".json"))
		msg, err := channel.Decode(got, id+".json", ch)
		if !tree.ValidName(ch) || err != nil || msg.SessionID != ch || !bytes.Equal(got, data) {
			t.Fatalf("wrote %q in %q: %v", id, ch, err)
		}
	})
}

// TestMirrorAccounts: as the remote agent's user of
// deploy/nats/accounts.conf (in its own account, with what it imports from
// COLLAB), the mirror reads the stream with direct gets, copies the
// keyring, and carries a reply and its kill requests.
func TestMirrorAccounts(t *testing.T) {
	m := newMountAs(t, true)
	h := newRemote(t, m)
	job := jobs.NewID()
	if err := os.MkdirAll(h.root().Jobs("alice"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.root().Jobs("alice"), job+".json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start(t)
	in := m.post(t, "bob", "a question")
	eventually(t, "question mirrored", func() bool { return readFile(filepath.Join(h.root().Channel("dev"), in.ID+".json")) != nil })
	reply := channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: "an answer"}}
	if err := (&channel.Writer{Root: h.root(), Signer: m.keys["alice"]}).Post(&reply); err != nil {
		t.Fatal(err)
	}
	eventually(t, "reply on the mount", func() bool { return readFile(filepath.Join(m.root.Channel("dev"), reply.ID+".json")) != nil })
	if err := jobs.RequestKill(m.root, "alice", job, "bob", m.keys["bob"]); err != nil {
		t.Fatal(err)
	}
	eventually(t, "kill mirrored", func() bool { return jobs.KillRequested(h.root(), "alice", job) })
	// read --follow and send --wait: a message from before the follow
	// started (by its start time) and one after (a hint, then a read).
	start := time.Now()
	before := m.post(t, "bob", "before the follow")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan string, 16)
	followed := make(chan error, 1)
	go func() {
		followed <- h.client.Follow(ctx, "dev", start, nil, func(m channel.Message) error { got <- m.ID; return nil })
	}()
	waitFor := func(id string) {
		t.Helper()
		for {
			select {
			case g := <-got:
				if g == id {
					return
				}
			case err := <-followed:
				t.Fatalf("follow ended: %v", err)
			case <-ctx.Done():
				t.Fatalf("follow never had %s", id)
			}
		}
	}
	waitFor(before.ID)
	waitFor(m.post(t, "bob", "during the follow").ID)
	cancel()
	if err := <-followed; err != nil {
		t.Fatalf("follow: %v", err)
	}
	if strings.Contains(h.log.String(), "ermission") {
		t.Fatalf("permission errors:\n%s", h.log)
	}
}

// TestMirrorWindows: a mirror away while more messages came than one
// read covers (mirrorWindow sequences, other channels' among them) reads
// them in turns, has each once, and its position ends at the stream's
// last message.
func TestMirrorWindows(t *testing.T) {
	m := newMount(t)
	h := newRemote(t, m)
	stop := h.start(t)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := 0
	for i := range mirrorWindow + streamBatch + 7 {
		ch := "dev"
		if i%5 == 0 {
			ch = "ops" // not mirrored: gaps in dev's sequences
		} else {
			n++
		}
		msg := channel.Message{ID: channel.NewID("bob", time.Now(), fmt.Sprintf("%04x", i%0x10000)), SessionID: ch, From: "bob", To: "alice", Content: channel.Content{Text: "m"}}
		if err := m.bus.PublishMessage(ctx, &msg); err != nil {
			t.Fatal(err)
		}
	}
	h.start(t)
	if got := fileCount(t, h.root().Channel("dev"), "msg-"); got != n {
		t.Fatalf("%d files after catching up, want %d", got, n)
	}
	js, err := jetstream.New(m.bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, natsbus.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	var st mirrorState
	data := readFile(filepath.Join(h.state, MirrorStateFile))
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	if last := s.CachedInfo().State.LastSeq; st.StreamSeq != last {
		t.Fatalf("position %d, the stream's last %d", st.StreamSeq, last)
	}
}

// TestMirrorNoDirect: on a stream that does not allow direct gets (made
// by collab nats init before it set allow_direct), the mirror and Follow
// stop at once with an error that names the fix.
func TestMirrorNoDirect(t *testing.T) {
	m := newMount(t)
	h := newRemote(t, m)
	js, err := jetstream.New(m.bus.Conn())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, natsbus.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.AllowDirect = false
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	mr, err := NewMirror(MirrorConfig{Client: h.client, Channels: []string{"dev"}, Dir: h.dir(), Poll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(h.dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"mirror": mr.Run(ctx),
		"follow": h.client.Follow(ctx, "dev", time.Now(), nil, func(channel.Message) error { return nil }),
	} {
		if !errors.Is(err, natsbus.ErrNoDirect) || !strings.Contains(err.Error(), "collab nats init") {
			t.Errorf("%s: %v, want natsbus.ErrNoDirect naming collab nats init", name, err)
		}
	}
	if ctx.Err() != nil {
		t.Fatal("the mirror or Follow waited for the end of its context")
	}
}

// BenchmarkMirrorIn: a mirror that was away while 1,000 messages arrived
// mirrors them from the stream (direct gets from its position, a file
// each).
func BenchmarkMirrorIn(b *testing.B) {
	const n = 1000
	m := newMount(b)
	h := newRemote(b, m)
	total := 0
	for b.Loop() {
		b.StopTimer()
		stop := h.start(b)
		if err := stop(); err != nil {
			b.Fatal(err)
		}
		for i := range n {
			m.post(b, "bob", fmt.Sprintf("message %d", i))
		}
		total += n
		eventually(b, "published", func() bool {
			s, err := m.bus.StreamIDs(context.Background(), "dev", time.Time{})
			return err == nil && len(s.IDs) >= total
		})
		b.StartTimer()
		stop = h.start(b)
		eventually(b, "mirrored", func() bool { return fileCount(b, h.root().Channel("dev"), "msg-") >= total })
		b.StopTimer()
		if err := stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// TestMirrorNATSRestart: the NATS server restarted under a running mirror
// (the stream kept on disk): every message arrives once, and a reply
// written meanwhile reaches the mount.
func TestMirrorNATSRestart(t *testing.T) {
	m := newMount(t)
	h := newRemote(t, m)
	h.start(t)
	var ids []string
	for i := range 5 {
		ids = append(ids, m.post(t, "bob", fmt.Sprintf("before %d", i)).ID)
	}
	eventually(t, "before mirrored", func() bool { return fileCount(t, h.root().Channel("dev"), "msg-") == 5 })
	m.srv.Restart()
	reply := channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: "while restarting"}}
	if err := (&channel.Writer{Root: h.root(), Signer: m.keys["alice"]}).Post(&reply); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		ids = append(ids, m.post(t, "bob", fmt.Sprintf("after %d", i)).ID)
	}
	eventually(t, "all mirrored", func() bool { return fileCount(t, h.root().Channel("dev"), "msg-") == 11 })
	for _, id := range ids {
		if readFile(filepath.Join(h.root().Channel("dev"), id+".json")) == nil {
			t.Fatalf("%s lost", id)
		}
	}
	eventually(t, "the reply on the mount", func() bool { return fileCount(t, m.root.Channel("dev"), "msg-") == 11 })
}

// FuzzMirrorState: whatever mirror-state.json holds, loading it fails or
// gives a state the mirror out can use.
func FuzzMirrorState(f *testing.F) {
	f.Add([]byte(`{"stream_seq":3,"stream_time":"2026-11-25T01:00:00Z","out":{"dev":{"floor":"2026-11-25T01:00:00Z","sent":["x"]}},"seen":{"dev":null}}`))
	f.Add([]byte(`{"out":{"dev":null}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, MirrorStateFile), data, 0o600); err != nil {
			t.Fatal(err)
		}
		mr := offlineMirror(t, dir)
		if err := os.MkdirAll(mr.Root().Channel("dev"), 0o700); err != nil {
			t.Fatal(err)
		}
		if mr.load() != nil {
			return
		}
		if err := mr.queueChannel("dev"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCatchUpCutShort: a catch-up from the files that its context ended
// is an error, so the position is not saved past what it did not read.
func TestCatchUpCutShort(t *testing.T) {
	mr := offlineMirror(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := mr.catchUp(ctx, "dev", time.Now().Add(-time.Hour)); !errors.Is(err, context.Canceled) {
		t.Fatalf("catchUp with its context ended = %v, want context.Canceled", err)
	}
}

// offlineMirror is agent a's mirror of dev with its state in dir and no
// NATS: for the parts that need neither the stream nor a bridge.
func offlineMirror(tb testing.TB, dir string) *Mirror {
	tb.Helper()
	c, err := New(Config{Agent: "a", StateDir: dir, Requester: offline{}})
	if err != nil {
		tb.Fatal(err)
	}
	mr, err := NewMirror(MirrorConfig{Client: c, Channels: []string{"dev"}, Dir: filepath.Join(dir, "tree")})
	if err != nil {
		tb.Fatal(err)
	}
	return mr
}

// TestMirrorStopsWhileNATSDown: a mirror told to stop while the server is
// down returns within its drain budget (the consumer is not made again
// and again behind its back).
func TestMirrorStopsWhileNATSDown(t *testing.T) {
	m := newMount(t)
	h := newRemote(t, m)
	stop := h.start(t)
	m.srv.Stop()
	time.Sleep(3 * time.Second) // fetches fail and consumers are asked for again
	done := make(chan error, 1)
	go func() { done <- stop() }()
	select {
	case <-done:
	case <-time.After(DrainBudget + 5*time.Second):
		t.Fatal("the mirror did not stop while the server was down")
	}
}
