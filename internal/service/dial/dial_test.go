package dial

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
)

// closedURL is a NATS URL nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "nats://" + addr
}

// TestOpenMount: on the mount NATS is optional: none configured, or a
// server that cannot be reached (a warning), still opens the mount; a
// server that answers is held and closed with it.
func TestOpenMount(t *testing.T) {
	ctx := context.Background()
	cfg := service.Config{Root: tree.Root(t.TempDir())}
	var warned []string
	warn := func(msg string) { warned = append(warned, msg) }
	for _, tc := range []struct {
		name    string
		url     string
		bus     bool
		warning string
	}{
		{name: "no NATS"},
		{name: "unreachable", url: closedURL(t), warning: "going on with files only"},
		{name: "connected", url: natstest.Start(t, false, nil).URL(), bus: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			warned = nil
			o, err := Open(ctx, Options{Mount: cfg, NATS: natsbus.Options{URL: tc.url}, MountNATS: true, Warn: warn})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer o.Close()
			if _, ok := o.Service.(*service.Mount); !ok || o.Remote() || (o.Bus != nil) != tc.bus {
				t.Errorf("Open = %T remote %v bus %v, want the mount, bus %v", o.Service, o.Remote(), o.Bus != nil, tc.bus)
			}
			if got := strings.Join(warned, "\n"); tc.warning == "" && got != "" || !strings.Contains(got, tc.warning) {
				t.Errorf("warned %q, want %q", got, tc.warning)
			}
		})
	}
}

// TestOpenRemote: through a bridge the agent's key is loaded (a writer
// without one is refused), a NATS server is required (Invalid without),
// and a client is held; a server that cannot be reached is no error.
func TestOpenRemote(t *testing.T) {
	ctx := context.Background()
	keys := t.TempDir()
	getenv := func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return keys
		}
		return ""
	}
	r := Remote{Agent: "claude", NeedKey: true, Getenv: getenv, StateDir: t.TempDir()}
	open := func(url string) (*Opened, error) {
		rr := r
		return Open(ctx, Options{Mount: service.Config{}, NATS: natsbus.Options{URL: url}, Remote: &rr})
	}
	if _, err := open(closedURL(t)); !errors.Is(err, remote.ErrNoKey) {
		t.Errorf("without a key: %v, want ErrNoKey", err)
	}
	if _, err := signing.NewKey(signing.DefaultKeyPath("claude", getenv), "claude", false); err != nil {
		t.Fatal(err)
	}
	if _, err := open(""); !errkind.Is(err, errkind.Invalid) {
		t.Errorf("without NATS: %v, want Invalid", err)
	}
	for _, url := range []string{closedURL(t), natstest.Start(t, false, nil).URL()} {
		o, err := open(url)
		if err != nil {
			t.Fatalf("Open at %s: %v", url, err)
		}
		if !o.Remote() || o.Client == nil || o.Bus != nil || filepath.Dir(o.Client.OutboxPath()) != r.StateDir {
			t.Errorf("Open at %s: remote %v, outbox %s", url, o.Remote(), o.Client.OutboxPath())
		}
		o.Close()
	}
}
