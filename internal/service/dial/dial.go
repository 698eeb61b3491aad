// Package dial opens a door's service (package service): on the files of
// a tree this host mounts, with NATS when it is configured, or through a
// bridge over NATS for a host without the mount (package bridged). A door
// opens it once, at its start, and makes its calls; it never branches on
// which one it got after that.
//
// # NATS
//
// On the mount NATS is optional: a server that cannot be reached is a
// warning (the files deliver everything), bad credentials an error, both
// before anything is written. Through a bridge it is the only way in: no
// server configured is errkind.Invalid; a server that cannot be reached is
// not an error (the client keeps its writes in its outbox).
package dial

import (
	"context"
	"errors"
	"fmt"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/service/bridged"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
)

// Options is what Open needs.
type Options struct {
	// Mount is the service's configuration on the mount (Root is
	// required there); Open sets its Publish and Wake when it connects to
	// NATS. Its Logger is the bridge client's too.
	Mount service.Config
	// NATS is the connection's options; URL "" is none.
	NATS natsbus.Options
	// MountNATS connects to NATS on the mount, when NATS.URL is set: posts
	// are announced and waits woken at once.
	MountNATS bool
	// Remote, if set, opens through a bridge instead of on the mount.
	Remote *Remote
	// Warn is told what goes wrong without failing (a NATS server that
	// cannot be reached, what resending the outbox did); default: nothing.
	Warn func(msg string)
}

// Remote is who a bridge client acts as.
type Remote struct {
	// Agent is the agent whose NATS subjects, key and state are used.
	Agent string
	// KeyPath is the agent's private key file ("": its default file, as
	// signing.LoadAgentKey finds it with Getenv); NeedKey refuses a client
	// without one (remote.ErrNoKey), as every writer needs one.
	KeyPath string
	NeedKey bool
	Getenv  func(string) string
	// StateDir is this host's state for the agent: its outbox.
	StateDir string
}

// Opened is an open service and what it holds.
type Opened struct {
	service.Service
	Client *remote.Client // through a bridge; nil on the mount
	Bus    *natsbus.Bus   // NATS on the mount; nil without
}

// Remote reports whether the service goes through a bridge.
func (o *Opened) Remote() bool { return o.Client != nil }

// Close releases the bridge client or the NATS connection.
func (o *Opened) Close() {
	if o.Client != nil {
		o.Client.Close()
	}
	if o.Bus != nil {
		o.Bus.Close()
	}
}

// Open opens the service o describes. Through a bridge it first resends
// what the agent's outbox holds, telling Warn what that did.
func Open(ctx context.Context, o Options) (*Opened, error) {
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
	if o.Remote != nil {
		return openRemote(ctx, o)
	}
	cfg, out := o.Mount, &Opened{}
	if o.MountNATS && o.NATS.URL != "" {
		bus, err := natsbus.Connect(ctx, o.NATS)
		switch {
		case errors.Is(err, natsbus.ErrUnreachable):
			o.Warn(fmt.Sprintf("warning: %v; going on with files only", err))
		case err != nil:
			return nil, err
		default:
			out.Bus, cfg.Publish = bus, bus.PublishMessage
			cfg.Wake = func(_ context.Context, ch string) (<-chan string, func(), error) { return bus.Wake(ch) }
		}
	}
	out.Service = service.NewMount(cfg)
	return out, nil
}

// openRemote connects to a bridge as o.Remote.Agent and resends its
// outbox.
func openRemote(ctx context.Context, o Options) (*Opened, error) {
	r := o.Remote
	signer, err := signing.LoadAgentKey(r.KeyPath, r.Agent, r.Getenv)
	if err != nil {
		return nil, err
	}
	if signer == nil && r.NeedKey {
		return nil, remote.ErrNoKey
	}
	if o.NATS.URL == "" {
		return nil, errkind.New(errkind.Invalid, "no NATS server to reach a bridge: use --nats URL or set NATS_URL")
	}
	c, err := remote.Dial(ctx, o.NATS, remote.Config{Agent: r.Agent, Signer: signer, StateDir: r.StateDir, Logger: o.Mount.Logger})
	if err != nil {
		return nil, err
	}
	res := c.Flush(ctx)
	if n := len(res.Sent); n > 0 {
		o.Warn(fmt.Sprintf("sent %d queued write(s) from the outbox %s", n, c.OutboxPath()))
	}
	for _, err := range res.Refused {
		o.Warn(fmt.Sprintf("warning: %v", err))
	}
	if res.Err != nil && !errors.Is(res.Err, remote.ErrQueued) {
		o.Warn(fmt.Sprintf("warning: outbox: %v", res.Err))
	}
	return &Opened{Service: bridged.New(c), Client: c}, nil
}
