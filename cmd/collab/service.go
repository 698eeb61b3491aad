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
	"github.com/collabdev/collab/internal/service/dial"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/spf13/pflag"
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
	*dial.Opened
	root  tree.Root // the mount's (serviceSpec.root)
	agent string    // who acts: serviceSpec.agent, through a bridge as actingAgent resolved it
}

// remote reports whether the service goes through a bridge.
func (o *openedService) remote() bool { return o.Remote() }

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

// openService opens the service a command works through (dial.Open):
// through a bridge when --remote is on, as the agent --agent or the login
// name gives (actingAgent), else on the mount, with NATS when sp.nats and
// configured.
func openService(ctx context.Context, sp serviceSpec, getenv env, stderr io.Writer) (*openedService, error) {
	cfg := mountConfig(sp.root, stderr)
	cfg.Verifier, cfg.Logger = sp.verifier, cmp.Or(sp.logger, cfg.Logger)
	o := dial.Options{Mount: cfg, MountNATS: sp.nats, Warn: func(msg string) { fmt.Fprintf(stderr, "collab: %s\n", msg) }}
	name := cmp.Or(sp.connName, sp.agent)
	if sp.rf != nil && sp.rf.on {
		agent, err := actingAgent(ctx, sp.cmd, "agent", sp.agent)
		if err != nil {
			return nil, err
		}
		sp.agent, name, o.Mount.Logger = agent, agent, commandLogger(stderr)
		o.Remote = &dial.Remote{Agent: agent, KeyPath: sp.keyPath, NeedKey: sp.needKey, Getenv: getenv, StateDir: sp.rf.stateDir(agent, getenv)}
	}
	if sp.nf != nil {
		o.NATS, _ = sp.nf.options(getenv, natsbus.ConnName(name, hostname()), o.Mount.Logger)
	}
	d, err := dial.Open(ctx, o)
	if err != nil {
		return nil, cmdErr(sp.cmd, err)
	}
	return &openedService{Opened: d, root: sp.root, agent: sp.agent}, nil
}

// fail is a command's error of the service layer, with its context: its
// kind gives the exit code (main's exitCode). A write kept in a remote
// host's outbox says where it waits and how it goes out.
func (o *openedService) fail(cmd string, err error) error {
	if o.Client != nil && errkind.Is(err, errkind.Queued) {
		var qe *remote.QueuedError
		if errors.As(err, &qe) {
			err = qe.Err
		}
		return errkind.New(errkind.Queued, "%s: %v; the message is kept in the outbox %s and is sent by the next remote command or `collab outbox flush --remote`",
			cmd, err, o.Client.OutboxPath())
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// readFlags are the flags of a command that reads (who, status): on the
// mount --root, judging signatures by --keyring; through a bridge
// (--remote) as --agent, for its subjects and state.
type readFlags struct {
	rf                *remoteFlags
	nf                *natsFlags
	agent, root, ring *string
}

func addReadFlags(fs *pflag.FlagSet) *readFlags {
	return &readFlags{rf: addRemoteFlags(fs), nf: addNATSFlags(fs), agent: remoteAgentFlag(fs), root: rootFlag(fs), ring: keyringFlag(fs)}
}

// open opens the service of command cmd.
func (f *readFlags) open(ctx context.Context, cmd string, getenv env, stderr io.Writer) (*openedService, error) {
	sp := serviceSpec{cmd: cmd, agent: *f.agent, root: tree.Resolve(*f.root, getenv), rf: f.rf, nf: f.nf}
	if !f.rf.on {
		sp.verifier = verifierFor(sp.root, keyring.In(sp.root, *f.ring), stderr)
	}
	return openService(ctx, sp, getenv, stderr)
}

// warner is a Warn that writes "collab: warning: MSG" on stderr.
func warner(stderr io.Writer) func(string) {
	return func(msg string) { fmt.Fprintf(stderr, "collab: warning: %s\n", msg) }
}
