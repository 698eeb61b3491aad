package main

// The choice of a command's service (internal/service): on the mount at
// --root, or through a bridge with --remote (COLLAB_REMOTE=1). A command
// opens it once and makes its calls; no command branches on --remote
// after that. The flags that choose it are shared (common).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/envflag"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/service/dial"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
)

// The variables of the shared flags.
const (
	envKeyring = "COLLAB_KEYRING"
	envKey     = "COLLAB_KEY"
	envRemote  = "COLLAB_REMOTE"
)

// A flag many commands share. A command adds those it has (common.add) in
// the order its --help lists them.
type shared int

const (
	withRoot        shared = iota // --root, from $COLLAB_ROOT: the tree
	withKeyring                   // --keyring: the trusted keys (default ROOT/keys)
	withKey                       // --key: the private key to sign with
	withRemote                    // --remote and --state-dir: through a bridge
	withNATS                      // the NATS connection's flags
	withRemoteAgent               // --agent of a command that has none of its own: the bridge connection's agent
)

// common are a command's shared flags as parsed (nil: not added), and
// the service they open.
type common struct {
	fs                     *pflag.FlagSet
	root, ring, key, agent *string
	rf                     *remoteFlags
	nf                     *natsFlags
}

// addCommon adds kinds to fs, in that order.
func addCommon(fs *pflag.FlagSet, kinds ...shared) *common {
	return (&common{fs: fs}).add(kinds...)
}

// add adds kinds to c's flag set, in that order.
func (c *common) add(kinds ...shared) *common {
	str := func(name, usage, env string) *string {
		p := c.fs.String(name, "", usage)
		envflag.FromEnv(c.fs, name, env)
		return p
	}
	for _, k := range kinds {
		switch k {
		case withRoot:
			c.root = c.fs.String("root", tree.DefaultRoot, "shared tree root")
			envflag.FromEnv(c.fs, "root", envRoot)
		case withKeyring:
			c.ring = str("keyring", "folder of trusted public keys (default ROOT/keys)", envKeyring)
		case withKey:
			c.key = str("key", "private key file to sign with (default $XDG_CONFIG_HOME/collab/keys/AGENT.key)", envKey)
		case withRemote:
			c.rf = &remoteFlags{}
			c.fs.BoolVar(&c.rf.on, "remote", false, "no mount: go through a bridge over NATS (--nats); --root is not used")
			envflag.FromEnv(c.fs, "remote", envRemote)
			c.fs.StringVar(&c.rf.state, "state-dir", "", "with --remote: this host's state for the agent, its outbox (default $XDG_STATE_HOME/collab/remote/AGENT)")
			envflag.FromEnv(c.fs, "state-dir", "COLLAB_STATE_DIR")
		case withNATS:
			c.nf = addNATSFlags(c.fs)
		case withRemoteAgent:
			c.agent = agentFlag(c.fs, "", "with --remote: the agent whose NATS subjects and local state are used", true)
		}
	}
	return c
}

// val is a flag's value, "" for a flag not added.
func val(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (c *common) cmd() string     { return cmdName(c.fs) }
func (c *common) remote() bool    { return c.rf != nil && c.rf.on }
func (c *common) keyPath() string { return val(c.key) }

// tree is the tree at --root.
func (c *common) tree(getenv env) tree.Root { return tree.Resolve(*c.root, getenv) }

// mount is the service on the mount at --root.
func (c *common) mount(getenv env, stderr io.Writer) *service.Mount {
	return mount(c.tree(getenv), stderr)
}

// verifier judges signatures with --keyring of root (verifierFor).
func (c *common) verifier(root tree.Root, stderr io.Writer) *signing.Verifier {
	return verifierFor(root, keyring.In(root, val(c.ring)), stderr)
}

// spec is the service the flags describe: the tree at --root; --remote,
// NATS, --key and --agent as given.
func (c *common) spec(getenv env) serviceSpec {
	sp := serviceSpec{cmd: c.cmd(), agent: val(c.agent), rf: c.rf, nf: c.nf, keyPath: val(c.key)}
	if c.root != nil {
		sp.root = c.tree(getenv)
	}
	return sp
}

// judged is spec judging signatures on the mount by --keyring, when the
// command has it.
func (c *common) judged(getenv env, stderr io.Writer) serviceSpec {
	sp := c.spec(getenv)
	if c.ring != nil && !c.remote() {
		sp.verifier = c.verifier(sp.root, stderr)
	}
	return sp
}

// remoteFlags are --remote and --state-dir.
type remoteFlags struct {
	on    bool
	state string
}

// stateDir is this host's state for agent: --state-dir, or its default.
func (f *remoteFlags) stateDir(agent string, getenv env) string {
	return cmp.Or(f.state, remote.DefaultStateDir(agent, getenv))
}

// remoteOn reports whether fs has --remote set (by flag or variable).
func remoteOn(fs *pflag.FlagSet) bool {
	f := fs.Lookup("remote")
	return f != nil && f.Value.String() == "true"
}

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

// useService opens the service of sp, runs fn with it and closes it.
func useService(ctx context.Context, sp serviceSpec, getenv env, stderr io.Writer, fn func(*openedService) error) error {
	svc, err := openService(ctx, sp, getenv, stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	return fn(svc)
}

// use is useService of judged, as the agent agent when it is set.
func (c *common) use(ctx context.Context, agent string, getenv env, stderr io.Writer, fn func(*openedService) error) error {
	sp := c.judged(getenv, stderr)
	sp.agent = cmp.Or(agent, sp.agent)
	return useService(ctx, sp, getenv, stderr, fn)
}

// useActor is use as the agent actorName gives.
func (c *common) useActor(ctx context.Context, getenv env, stderr io.Writer, fn func(*openedService) error) error {
	agent, err := actorName(ctx, c.cmd(), c.remote(), *c.agent)
	if err != nil {
		return err
	}
	return c.use(ctx, agent, getenv, stderr, fn)
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

// verifierFor returns a verifier over ring, after checking the ring as a
// reader: an unsafe keyring is reported on stderr (its verdicts prove
// nothing) but still used, since a reader only shows them.
func verifierFor(root tree.Root, ring *keyring.Ring, stderr io.Writer) *signing.Verifier {
	if err := ring.Check(keyring.Owner(string(root)), true); err != nil {
		fmt.Fprintf(stderr, "collab: warning: %v\n", err)
	}
	return signing.NewVerifier(ring).Forgetful() // a command reads each file once
}

// actorName returns the agent a workspace command acts for: on the mount
// --agent as given (NAME or NAME@INSTANCE; the service checks it); else,
// and through a bridge always (the name is the connection's), --agent or
// the login name, checked here.
func actorName(ctx context.Context, cmd string, remote bool, agent string) (string, error) {
	if agent != "" && !remote {
		return agent, nil
	}
	return actingAgent(ctx, cmd, "agent", agent)
}

// exitAs gives err, when it is of one of kinds, the exit code a command
// documents for it (exit 1 where its help promised 1 before the service
// layer had kinds), keeping its message. Other errors pass as they are.
func exitAs(code int, err error, kinds ...errkind.Kind) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) || !slices.Contains(kinds, errkind.Of(err)) {
		return err
	}
	return &exitError{code: code, msg: err.Error()}
}

// warner is a Warn that writes "collab: warning: MSG" on stderr.
func warner(stderr io.Writer) func(string) {
	return func(msg string) { fmt.Fprintf(stderr, "collab: warning: %s\n", msg) }
}
