package mcpserver

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
)

// viaBridge, when true, makes connectWith serve the tools through a
// bridge (Config.Remote) over a tree that stays the tests' cfg.Root: the
// mount. TestToolsViaBridge sets it; no test here is parallel.
var viaBridge bool

// bridgeConfig turns cfg (a mounted server's) into the same server on a
// host without the tree: an embedded NATS server with JetStream, a bridge
// and its publisher serving cfg.Root, and a client for cfg.Agent whose key
// the mount trusts. The server's own Root is an empty local folder.
func bridgeConfig(t testing.TB, cfg Config) Config {
	cfg, _, _ = bridgeSetup(t, cfg)
	return cfg
}

// bridgeSetup is bridgeConfig; it also returns the function that stops
// the bridge and its publisher, and the one that starts them again
// (returning its own stop; all stop with the test).
func bridgeSetup(t testing.TB, cfg Config) (Config, func(), func() (stop func())) {
	t.Helper()
	mount := cfg.Root
	url := natstest.Start(t, true, nil).URL()
	quiet := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	bus, err := natsbus.Connect(ctx, natsbus.Options{URL: url, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Close)
	if _, err := bus.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	if cfg.Signer == nil {
		if cfg.Signer, err = signing.NewKey(filepath.Join(t.TempDir(), cfg.Agent+".key"), cfg.Agent, false); err != nil {
			t.Fatal(err)
		}
		if err := keyring.Open(mount.Keys()).Trust(cfg.Agent, cfg.Signer.PublicKey()); err != nil {
			t.Fatal(err)
		}
	}
	pubState := filepath.Join(t.TempDir(), "pub.json")
	start := func() (stop func()) {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		srv := bridge.New(bridge.Config{Root: mount, Verifier: signing.NewVerifier(keyring.Open(mount.Keys())), Host: "mounted", Logger: quiet})
		pub := &bridge.Publisher{Root: mount, Stream: bus, StateFile: pubState, Poll: 20 * time.Millisecond, Logger: quiet}
		bctx, stopIt := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { _ = srv.Serve(bctx, nc) })
		wg.Go(func() { _ = pub.Run(bctx) })
		for nc.NumSubscriptions() == 0 {
			time.Sleep(time.Millisecond)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		stop = func() { once.Do(func() { stopIt(); wg.Wait(); nc.Close() }) }
		t.Cleanup(stop)
		return stop
	}
	stop := start()
	c, err := remote.Dial(ctx, natsbus.Options{URL: url, Logger: quiet}, remote.Config{Agent: cfg.Agent, Signer: cfg.Signer, StateDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cfg.Remote = c
	cfg.Root = tree.Root(t.TempDir())
	if cfg.Verifier == nil {
		cfg.Verifier = signing.NewVerifier(keyring.Open(mount.Keys()))
	}
	return cfg, stop, start
}

// TestBridgedQueuedPost: with no bridge, channel_send and send_and_wait
// say queued and write nothing on the mount; the next post, once a bridge
// is back, sends the queued ones first: every message on the mount once.
func TestBridgedQueuedPost(t *testing.T) {
	mount := tree.Root(t.TempDir())
	cfg, stop, start := bridgeSetup(t, Config{Root: mount, Agent: "claude", Channel: "dev", Hops: -1})
	_, cs := connectWith(t, cfg)
	stop()
	var sent SendResult
	if e := call(t, cs, "channel_send", map[string]any{"message": "while away"}, &sent); e != "" || !sent.Queued || sent.ID == "" {
		t.Fatalf("channel_send with no bridge: %q %+v; want queued", e, sent)
	}
	var waited SendAndWaitResult
	if e := call(t, cs, "send_and_wait", map[string]any{"message": "still away?", "to": "codex", "timeout_seconds": 5}, &waited); e != "" || !waited.Queued {
		t.Fatalf("send_and_wait with no bridge: %q %+v; want queued at once", e, waited)
	}
	if msgs, _, _ := channel.ReadAll(mount, "dev", channel.ReaderOptions{}); len(msgs) != 0 {
		t.Fatalf("on the mount with no bridge: %+v", msgs)
	}
	start()
	var back SendResult
	if e := call(t, cs, "channel_send", map[string]any{"message": "back"}, &back); e != "" || back.Queued {
		t.Fatalf("channel_send with the bridge back: %q %+v", e, back)
	}
	var got []string
	msgs, _, _ := channel.ReadAll(mount, "dev", channel.ReaderOptions{})
	for _, m := range msgs {
		got = append(got, m.ID)
	}
	slices.Sort(got)
	want := []string{sent.ID, waited.ID, back.ID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("on the mount: %q; want each message once: %q", got, want)
	}
}

// TestToolsViaBridge runs the tools' tests with every tool going through
// a bridge: the same results, the files on the mount the same.
func TestToolsViaBridge(t *testing.T) {
	viaBridge = true
	t.Cleanup(func() { viaBridge = false })
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"channel", TestChannelTools},
		{"who", TestWho},
		{"tasks", TestTaskTools},
		{"send_and_wait", testSendAndWait},
		{"inbox", TestInboxTools},
		{"documents", TestDocumentTools},
		{"status", TestMessageStatus},
		{"task_context", TestTaskContextTool},
		{"peek_empty", TestPeekEmptyChannel},
		{"signs", TestSignsAndVerifies},
		{"more", TestReadMoreExact},
	} {
		t.Run(tc.name, tc.test)
	}
}
