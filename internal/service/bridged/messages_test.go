package bridged_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/service/bridged"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
)

// setup starts a NATS server and a bridge on a mount, and returns the
// mount, the Service of agent rem through the bridge, and the function
// that stops the bridge.
func setup(t *testing.T) (tree.Root, *bridged.Service, func()) {
	t.Helper()
	mount := tree.Root(t.TempDir())
	url := natstest.Start(t, true, nil).URL()
	quiet := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	signer, err := signing.NewKey(filepath.Join(t.TempDir(), "rem.key"), "rem", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := keyring.Open(mount.Keys()).Trust("rem", signer.PublicKey()); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	srv := bridge.New(bridge.Config{Root: mount, Verifier: signing.NewVerifier(keyring.Open(mount.Keys())), Host: "mounted", Logger: quiet})
	bctx, stopBridge := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(bctx, nc) })
	for nc.NumSubscriptions() == 0 {
		time.Sleep(time.Millisecond)
	}
	var once sync.Once
	stop := func() { once.Do(func() { stopBridge(); wg.Wait(); nc.Close() }) }
	t.Cleanup(stop)
	c, err := remote.Dial(ctx, natsbus.Options{URL: url, Logger: quiet}, remote.Config{Agent: "rem", Signer: signer, StateDir: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return mount, bridged.New(c), stop
}

func TestBridgedPostAndStatus(t *testing.T) {
	mount, svc, stop := setup(t)
	ctx := context.Background()
	rem := service.Actor{Name: "rem", Hops: 1}
	got, err := svc.Post(ctx, rem, service.PostRequest{Channel: "dev", To: "reviewer@pr-1", Text: "look", Host: "far"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := channel.Lookup(mount, "dev", got.Message.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.From != "rem" || m.To != "reviewer--pr-1" || m.Metadata.Hops != 2 || m.Signature == nil {
		t.Errorf("posted %+v; want rem's signed message to reviewer--pr-1 at hops 2", m)
	}
	if _, err := svc.Status(ctx, service.StatusRequest{Channel: "dev", ID: m.ID}); err != nil {
		t.Errorf("Status in its channel: %v", err)
	}
	if _, err := svc.Status(ctx, service.StatusRequest{Channel: "ops", ID: m.ID}); !errkind.Is(err, errkind.NotFound) {
		t.Errorf("Status in another channel: %v; want NotFound", err)
	}
	if _, err := svc.Post(ctx, service.Actor{Name: "mallory"}, service.PostRequest{Channel: "dev", Text: "x"}); !errkind.Is(err, errkind.Forbidden) {
		t.Errorf("Post as another: %v; want Forbidden", err)
	}
	if _, err := svc.Audit(ctx, service.AuditRequest{Channel: "dev"}); !errkind.Is(err, errkind.Unavailable) {
		t.Errorf("Audit: %v; want Unavailable", err)
	}
	stop()
	queued, err := svc.Post(ctx, rem, service.PostRequest{Channel: "dev", Text: "while away"})
	if !errkind.Is(err, errkind.Queued) || !queued.Queued || queued.Message.ID == "" {
		t.Errorf("Post with no bridge = %+v, %v; want Queued", queued, err)
	}
}
