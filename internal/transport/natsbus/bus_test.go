package natsbus_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/presence"
)

func TestOptionsFromEnv(t *testing.T) {
	env := map[string]string{
		"NATS_URL": "nats://h:4222", "NATS_CREDS": "c", "NATS_NKEY": "n", "NATS_USER": "u",
		"NATS_PASSWORD": "p", "NATS_TOKEN": "t", "NATS_CA": "ca", "NATS_CERT": "cert", "NATS_KEY": "key",
	}
	got := natsbus.OptionsFromEnv(func(k string) string { return env[k] })
	want := natsbus.Options{URL: "nats://h:4222", CredsFile: "c", NKeySeedFile: "n", User: "u",
		Password: "p", Token: "t", TLSCA: "ca", TLSCert: "cert", TLSKey: "key"}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestConnectRefusesBadOptions(t *testing.T) {
	tests := []struct {
		name string
		o    natsbus.Options
		want string
	}{
		{"no url", natsbus.Options{}, "no server URL"},
		{"two credentials", natsbus.Options{URL: "nats://x", User: "u", Token: "t"}, "a user and password and a token"},
		{"password alone", natsbus.Options{URL: "nats://x", Password: "p"}, "a password without a user"},
		{"cert without key", natsbus.Options{URL: "nats://x", TLSCert: "c"}, "both the certificate and its key"},
		{"missing seed", natsbus.Options{URL: "nats://x", NKeySeedFile: "/nonexistent"}, "nkey seed /nonexistent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := natsbus.Connect(context.Background(), tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestConnectAuth(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(t.TempDir(), "user.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	other, _ := nkeys.CreateUser()
	otherSeed, _ := other.Seed()
	otherFile := filepath.Join(t.TempDir(), "other.nk")
	if err := os.WriteFile(otherFile, otherSeed, 0o600); err != nil {
		t.Fatal(err)
	}

	servers := map[string]*testServer{
		"user":  startServer(t, false, func(o *server.Options) { o.Username, o.Password = "alice", "s3cret" }),
		"token": startServer(t, false, func(o *server.Options) { o.Authorization = "tok3n" }),
		"nkey": startServer(t, false, func(o *server.Options) {
			o.Nkeys = []*server.NkeyUser{{Nkey: pub}}
		}),
	}
	tests := []struct {
		server string
		name   string
		o      natsbus.Options
		ok     bool
	}{
		{"user", "none", natsbus.Options{}, false},
		{"user", "wrong password", natsbus.Options{User: "alice", Password: "nope"}, false},
		{"user", "right", natsbus.Options{User: "alice", Password: "s3cret"}, true},
		{"token", "none", natsbus.Options{}, false},
		{"token", "wrong", natsbus.Options{Token: "nope"}, false},
		{"token", "right", natsbus.Options{Token: "tok3n"}, true},
		{"nkey", "none", natsbus.Options{}, false},
		{"nkey", "other key", natsbus.Options{NKeySeedFile: otherFile}, false},
		{"nkey", "right", natsbus.Options{NKeySeedFile: seedFile}, true},
	}
	for _, tt := range tests {
		t.Run(tt.server+"/"+tt.name, func(t *testing.T) {
			o := tt.o
			o.URL = servers[tt.server].URL()
			o.ConnectTimeout = time.Second
			o.Logger, _ = newLogger()
			start := time.Now()
			b, err := natsbus.Connect(context.Background(), o)
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("Connect took %v", took)
			}
			if tt.ok {
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				b.Close()
				return
			}
			if err == nil {
				b.Close()
				t.Fatal("Connect without valid credentials succeeded")
			}
			t.Logf("error: %v", err)
			if !errors.Is(err, natsbus.ErrAuth) || !strings.Contains(err.Error(), "authorization failed") {
				t.Errorf("got %v, want an authorization error", err)
			}
			if tt.name == "none" && !strings.Contains(err.Error(), "none were given") {
				t.Errorf("got %v, want it to say no credentials were given", err)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "tok3n") {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
}

func TestConnectURLCredentialsAreRedacted(t *testing.T) {
	s := startServer(t, false, func(o *server.Options) { o.Username, o.Password = "alice", "s3cret" })
	url := strings.Replace(s.URL(), "nats://", "nats://alice:wrong@", 1)
	_, err := natsbus.Connect(context.Background(), natsbus.Options{URL: url, Logger: discard()})
	if !errors.Is(err, natsbus.ErrAuth) {
		t.Fatalf("got %v, want ErrAuth", err)
	}
	if strings.Contains(err.Error(), "wrong") || strings.Contains(err.Error(), "alice") {
		t.Errorf("the error shows the URL's credentials: %v", err)
	}
	b, err := natsbus.Connect(context.Background(), natsbus.Options{URL: strings.Replace(url, "wrong", "s3cret", 1), Logger: discard()})
	if err != nil {
		t.Fatalf("Connect with credentials in the URL: %v", err)
	}
	b.Close()
}

func discard() *slog.Logger { l, _ := newLogger(); return l }

// freePort returns a port nothing listens on.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestConnectUnreachable(t *testing.T) {
	port := freePort(t)
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	start := time.Now()
	_, err := natsbus.Connect(context.Background(), natsbus.Options{URL: url, ConnectTimeout: time.Second, Logger: discard()})
	if !errors.Is(err, natsbus.ErrUnreachable) {
		t.Fatalf("got %v, want ErrUnreachable", err)
	}
	t.Logf("error: %v", err)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Connect took %v", took)
	}

	// KeepTrying: the Bus connects once the server is up.
	b, _ := connect(t, natsbus.Options{URL: url, KeepTrying: true})
	m := &channel.Message{ID: "msg-20260111-163315-claude-4c78", SessionID: "c", From: "claude", Content: channel.Content{Text: "x"}}
	if err := b.PublishMessage(context.Background(), m); err == nil {
		t.Error("publish before the server is up succeeded")
	}
	s := startServer(t, false, func(o *server.Options) { o.Port = port })
	_ = s
	eventually(t, "the background connect", func() bool {
		return b.PublishMessage(context.Background(), m) == nil
	})
}

func TestCorePublishWakes(t *testing.T) {
	s := startServer(t, false, nil)
	root := tree.Root(t.TempDir())
	pub, publog := connect(t, natsbus.Options{URL: s.URL()})
	sub, _ := connect(t, natsbus.Options{URL: s.URL()})
	if pub.JetStream() {
		t.Fatal("JetStream() on a server without JetStream")
	}
	if log := publog.String(); !contains(log, "publishing with core nats") || contains(log, "check failed") {
		t.Errorf("log:\n%s", log)
	}

	woke := make(chan struct{}, 10)
	got := make(chan channel.Message, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- natsbus.Waker{Bus: sub, OnMessage: func(m channel.Message) { got <- m }}.
			Watch(ctx, []string{"room", "other"}, func(string, string) { woke <- struct{}{} })
	}()
	// Watch subscribes asynchronously: publish until the first arrives.
	m := post(t, root, "room", "claude", "codex please look")
	deadline := time.After(5 * time.Second)
	for received := false; !received; {
		if err := pub.PublishMessage(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		select {
		case g := <-got:
			received = true
			if g.Key() != m.ID || g.ID != m.ID || g.Content.Text != m.Content.Text || g.SessionID != "room" || g.From != "claude" {
				t.Errorf("got %+v, want %+v", g, m)
			}
			<-woke
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("no wake-up")
		}
	}
	// A message on a channel not watched does not wake.
	drain(woke)
	drain(got)
	if err := pub.PublishMessage(context.Background(), post(t, root, "elsewhere", "claude", "hi")); err != nil {
		t.Fatal(err)
	}
	m2 := post(t, root, "other", "claude", "second channel")
	if err := pub.PublishMessage(context.Background(), m2); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		if g.ID != m2.ID {
			t.Errorf("got %s, want %s", g.ID, m2.ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up on the second channel")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Watch: %v", err)
	}
	if st := pub.Stats(); st.Failed != 0 || st.Published < 3 {
		t.Errorf("publisher stats %+v", st)
	}
}

func drain[T any](c chan T) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func TestJetStreamDualWriteExactlyOnce(t *testing.T) {
	s := startServer(t, true, nil)
	root := tree.Root(t.TempDir())
	b, lb := connect(t, natsbus.Options{URL: s.URL()})
	if b.JetStream() {
		t.Fatal("JetStream() before the stream exists")
	}
	ctx := ctxT(t)
	created, err := b.InitStream(ctx, natsbus.StreamConfig{})
	if err != nil || !created {
		t.Fatalf("InitStream: %v, created %v", err, created)
	}
	if created, err := b.InitStream(ctx, natsbus.StreamConfig{MaxBytes: 1 << 20}); err != nil || created {
		t.Fatalf("InitStream again: %v, created %v", err, created)
	}
	if !b.JetStream() {
		t.Fatal("JetStream() after InitStream")
	}
	if !contains(lb.String(), "nats publishing to jetstream") {
		t.Errorf("log does not say the stream is used:\n%s", lb)
	}

	m := post(t, root, "room", "claude", "hello")
	for range 3 {
		if err := b.PublishMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if st := b.Stats(); st.Published != 3 || st.Duplicates != 2 || st.Failed != 0 {
		t.Errorf("stats %+v, want 3 published of which 2 duplicates", st)
	}
	set, err := b.StreamIDs(ctx, "room", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.IDs) != 1 || len(set.Duplicates) != 0 {
		t.Errorf("stream holds %v, duplicates %v; want only %s", set.IDs, set.Duplicates, m.ID)
	}
	info, err := jsFor(t, s).Stream(ctx, natsbus.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if n := info.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("stream has %d messages, want 1", n)
	}
	cfg := info.CachedInfo().Config
	if cfg.Duplicates != natsbus.DefaultDuplicates || cfg.MaxAge != natsbus.DefaultMaxAge ||
		cfg.MaxBytes != 1<<20 || cfg.Storage != jetstream.FileStorage || cfg.Subjects[0] != "collab.chat.>" {
		t.Errorf("stream config %+v", cfg)
	}
}

// jsFor returns a plain JetStream client of s, for looking behind the Bus.
func jsFor(t *testing.T, s *testServer) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func TestStreamAppearsAndGoes(t *testing.T) {
	s := startServer(t, true, nil)
	root := tree.Root(t.TempDir())
	ctx := ctxT(t)
	early, _ := connect(t, natsbus.Options{URL: s.URL()})
	admin, _ := connect(t, natsbus.Options{URL: s.URL()})
	if _, err := admin.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	// A Bus that has not noticed the stream yet publishes on core NATS,
	// and the stream captures the message all the same, deduplicated.
	if early.JetStream() {
		t.Fatal("the early Bus saw the stream at once")
	}
	m := post(t, root, "room", "claude", "hello")
	for range 2 {
		if err := early.PublishMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	js := jsFor(t, s)
	eventually(t, "the stream to store the core publish", func() bool {
		st, err := js.Stream(ctx, natsbus.StreamName)
		return err == nil && st.CachedInfo().State.Msgs == 1
	})

	// The stream is deleted: the next publish finds no stream and goes out
	// on core NATS instead of failing.
	if err := js.DeleteStream(ctx, natsbus.StreamName); err != nil {
		t.Fatal(err)
	}
	if !admin.JetStream() {
		t.Fatal("admin does not use the stream it made")
	}
	if err := admin.PublishMessage(ctx, post(t, root, "room", "claude", "after")); err != nil {
		t.Errorf("publish with the stream gone: %v", err)
	}
	if admin.JetStream() {
		t.Error("still JetStream after the stream went away")
	}
}

func TestPresence(t *testing.T) {
	s := startServer(t, false, nil)
	b, _ := connect(t, natsbus.Options{URL: s.URL()})
	nc, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("collab.presence.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	st := presence.Status{AgentID: "codex", State: presence.StateAwake, Substate: presence.SubIdle, WatcherPID: 42, Channel: "room", Host: "vm-2"}
	if err := b.PublishPresence(st); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Subject != "collab.presence.codex" {
		t.Errorf("subject %q", msg.Subject)
	}
	got, err := presence.Decode(msg.Data, "codex")
	if err != nil {
		t.Fatal(err)
	}
	if got.Timestamp == "" || got.WatcherPID != 42 || got.Host != "vm-2" || got.Effective(time.Now(), 0, "", nil) != presence.AwakeIdle {
		t.Errorf("got %+v", got)
	}
	if err := b.PublishPresence(presence.Status{AgentID: "no.dots", State: presence.StateAwake}); err == nil {
		t.Error("a bad agent name was published")
	}
	if n := b.Stats().Failed; n != 1 {
		t.Errorf("failed = %d, want 1", n)
	}
}

func TestWakerWakesAfterReconnect(t *testing.T) {
	s := startServer(t, false, nil)
	b, lb := connect(t, natsbus.Options{URL: s.URL()})
	woke := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go natsbus.Waker{Bus: b}.Watch(ctx, []string{"room"}, func(string, string) { woke <- struct{}{} })
	select {
	case <-woke: // subscribed: what was announced before is in the files
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up once subscribed")
	}
	s.Restart()
	select {
	case <-woke: // messages sent during the outage are in the files: poll
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up after the reconnect")
	}
	if st := b.Stats(); st.Disconnects != 1 || st.Reconnects != 1 {
		t.Errorf("stats %+v, want one disconnect and one reconnect", st)
	}
	log := lb.String()
	if !contains(log, "nats disconnected; reconnecting") || !contains(log, "nats reconnected") {
		t.Errorf("log:\n%s", log)
	}
}

func TestSubscribeRejectsBadPayloads(t *testing.T) {
	s := startServer(t, false, nil)
	b, lb := connect(t, natsbus.Options{URL: s.URL()})
	got := make(chan channel.Message, 10)
	sub, err := b.Subscribe([]string{"room"}, func(m channel.Message) { got <- m })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	nc, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, data := range []string{"not json", `{"from":"x"}`, `{"from":"x","content":{"text":"t"}}`} {
		if err := nc.Publish("collab.chat.room", []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	good := &nats.Msg{Subject: "collab.chat.room", Header: nats.Header{},
		Data: []byte(`{"from":"x","content":{"text":"t"}}`)}
	good.Header.Set("Nats-Msg-Id", "msg-20260111-163315-x-0001")
	if err := nc.PublishMsg(good); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m.ID != "msg-20260111-163315-x-0001" || m.SessionID != "room" || m.To != "all" {
			t.Errorf("got %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the valid message did not arrive")
	}
	if st := b.Stats(); st.Rejected != 3 || st.Received != 1 {
		t.Errorf("stats %+v, want 3 rejected, 1 received", st)
	}
	if !contains(lb.String(), "nats payload rejected") {
		t.Errorf("log:\n%s", lb)
	}
	if _, err := b.Subscribe([]string{"a.b"}, func(channel.Message) {}); err == nil {
		t.Error("subscribed to a bad channel name")
	}
}

func TestDrainAndClose(t *testing.T) {
	s := startServer(t, false, nil)
	b, _ := connect(t, natsbus.Options{URL: s.URL()})
	done := make(chan error, 1)
	go func() {
		done <- natsbus.Waker{Bus: b}.Watch(context.Background(), []string{"room"}, func(string, string) {})
	}()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := b.Drain(); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Drain took %v", took)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("Watch returned nil after the Bus closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return after Drain")
	}
	b.Close() // after Drain: harmless
	m := &channel.Message{ID: "msg-20260111-163315-claude-4c78", SessionID: "c", From: "claude", Content: channel.Content{Text: "x"}}
	if err := b.PublishMessage(context.Background(), m); err == nil {
		t.Error("publish after Drain succeeded")
	}
}

func presenceOf(agent string) presence.Status {
	return presence.Status{AgentID: agent, State: presence.StateAwake, Substate: presence.SubIdle}
}

func TestConnectMissingCredsFile(t *testing.T) {
	s := startServer(t, false, nil)
	_, err := natsbus.Connect(context.Background(), natsbus.Options{URL: s.URL(), CredsFile: "/nonexistent.creds", Logger: discard()})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent.creds") {
		t.Errorf("got %v, want an error naming the file", err)
	}
	t.Logf("error: %v", err)
}
