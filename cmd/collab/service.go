package main

// The choice of a command's service (internal/service): on the mount at
// --root, or through a bridge with --remote (COLLAB_REMOTE=1). A command
// opens it once and makes its calls; no command branches on --remote
// after that.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/service/bridged"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
)

// serviceSpec is what a command's service needs.
type serviceSpec struct {
	cmd   string // the command, for errors ("send")
	agent string // who acts: the NATS connection's name, the bridge client's agent
	// root is the tree on the mount (tree.Resolve of --root).
	root tree.Root
	rf   *remoteFlags // nil: the command has no --remote
	nf   *natsFlags   // nil: no NATS
	// keyPath is --key (remote: the client signs with the agent's key);
	// needKey refuses a remote client without one.
	keyPath string
	needKey bool
	// verifier judges signatures on the mount (nil: every key unknown).
	verifier *signing.Verifier
	// nats connects to NATS on the mount when configured (optional: an
	// unreachable server is a warning): posts are announced, waits woken.
	nats bool
	// logger is the service's and its NATS connection's (default
	// commandLogger); connName names the connection (default agent).
	logger   *slog.Logger
	connName string
}

// openedService is a command's service and what it holds.
type openedService struct {
	service.Service
	root   tree.Root      // the mount's (serviceSpec.root)
	client *remote.Client // through a bridge; nil on the mount
	bus    *natsbus.Bus   // NATS on the mount; nil without
}

// Close releases the bridge client or the NATS connection.
func (o *openedService) Close() {
	if o.client != nil {
		o.client.Close()
	}
	if o.bus != nil {
		o.bus.Close()
	}
}

// remote reports whether the service goes through a bridge.
func (o *openedService) remote() bool { return o.client != nil }

// mountConfig is the service's configuration of every command on the
// mount at root: this host, warnings to stderr, and this program to run
// the watchers it starts (delegated agents, background teams).
func mountConfig(root tree.Root, stderr io.Writer) service.Config {
	self, _ := os.Executable()
	return service.Config{Root: root, Host: hostname(), Logger: commandLogger(stderr), Program: self}
}

// mount is the service of a command on the mount at root.
func mount(root tree.Root, stderr io.Writer) *service.Mount {
	return service.NewMount(mountConfig(root, stderr))
}

// openService opens the service a command works through: through a bridge
// when --remote is on (after the outbox is resent, as every remote
// command does), else on the mount, with NATS when sp.nats and
// configured (bad credentials fail here, before anything is written).
func openService(ctx context.Context, sp serviceSpec, getenv env, stderr io.Writer) (*openedService, error) {
	if sp.rf != nil && sp.rf.on {
		c, err := remoteClient(ctx, sp.cmd, sp.rf, sp.nf, sp.agent, sp.keyPath, sp.needKey, getenv, stderr)
		if err != nil {
			return nil, err
		}
		return &openedService{Service: bridged.New(c), root: sp.root, client: c}, nil
	}
	cfg := mountConfig(sp.root, stderr)
	cfg.Verifier, cfg.Logger = sp.verifier, cmp.Or(sp.logger, cfg.Logger)
	out := &openedService{root: sp.root}
	if sp.nats && sp.nf != nil {
		if o, ok := sp.nf.options(getenv, natsbus.ConnName(cmp.Or(sp.connName, sp.agent), hostname()), cfg.Logger); ok {
			bus, err := connectOptional(ctx, o, stderr)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sp.cmd, err)
			}
			if bus != nil {
				out.bus = bus
				cfg.Publish = bus.PublishMessage
				cfg.Wake = busWake(bus)
			}
		}
	}
	out.Service = service.NewMount(cfg)
	return out, nil
}

// fail is a command's error of the service layer, with its context: its
// kind gives the exit code (main's exitCode). A write kept in a remote
// host's outbox says where it waits and how it goes out.
func (o *openedService) fail(cmd string, err error) error {
	if o.client != nil && errkind.Is(err, errkind.Queued) {
		var qe *remote.QueuedError
		if errors.As(err, &qe) {
			err = qe.Err
		}
		return errkind.New(errkind.Queued, "%s: %v; the message is kept in the outbox %s and is sent by the next remote command or `collab outbox flush --remote`",
			cmd, err, o.client.OutboxPath())
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// openReadService opens the service of a command that reads (read, who,
// status): on the mount at root, judging signatures by the keyring ring
// (--keyring); through a bridge as agent (--agent, for its subjects and
// state).
func openReadService(ctx context.Context, cmd string, rf *remoteFlags, nf *natsFlags, agent string, root tree.Root, ring string, getenv env, stderr io.Writer) (*openedService, error) {
	sp := serviceSpec{cmd: cmd, root: root, rf: rf, nf: nf}
	if rf.on {
		a, err := actingAgent(ctx, cmd, "agent", agent)
		if err != nil {
			return nil, err
		}
		sp.agent = a
	} else {
		sp.verifier = verifierFor(root, keyring.In(root, ring), stderr)
	}
	return openService(ctx, sp, getenv, stderr)
}

// busWake is the service's Wake on bus: the names of the message files
// announced on a channel.
func busWake(bus *natsbus.Bus) func(ctx context.Context, ch string) (<-chan string, func(), error) {
	return func(_ context.Context, ch string) (<-chan string, func(), error) { return bus.Wake(ch) }
}
