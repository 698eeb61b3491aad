// Package remotewatch is collab watch --remote: the ordinary watcher
// (watchsetup) on a local mirror of its channels, STATE/tree, its claims
// decided on the mount and everything it writes carried there through a
// bridge (remote.Client). The mirror starts first, then the watcher once
// the mirror has caught up (at most [CatchUp]). On exit the watcher stops
// first (its grace, its OFFLINE heartbeat), then the mirror drains its
// outbox for at most remote.DrainBudget (what is left is sent by the
// next start).
//
// Errors that a bad setting, a missing key, server or state directory
// cause are errkind.Invalid, as watchsetup's.
package remotewatch

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/collabdev/collab/internal/agent/watchsetup"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/watcher"
)

// Request is a watch --remote.
type Request struct {
	// Settings are the watcher's; its NATS server is required.
	Settings watchsetup.Settings
	Host     watchsetup.Host
	// State is --state-dir as given ("": remote.DefaultStateDir).
	State string
	// StartMirror starts the mirror; nil: [StartMirror]. Tests give a
	// stand-in.
	StartMirror func(ctx context.Context, c *remote.Client, s watchsetup.Settings, state string, logger *slog.Logger) (*Mirror, error)
}

// Run runs the watcher of req on its mirror until ctx ends or the mirror
// fails (it would answer blind).
func Run(ctx context.Context, req Request) error {
	// Refused before the mirror starts, not once it has caught up.
	d, err := dialing(req)
	if err != nil {
		return err
	}
	c, err := remote.Dial(ctx, d.nats, remote.Config{Agent: req.Settings.Agent, Signer: d.signer, StateDir: d.state, Logger: d.logger})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer c.Close()
	start := req.StartMirror
	if start == nil {
		start = StartMirror
	}
	m, err := start(ctx, c, req.Settings, d.state, d.logger)
	if err != nil {
		return err
	}
	defer m.Stop() // after the watcher has stopped: it drains what it wrote
	if err := m.AwaitCaughtUp(ctx, CatchUp); err != nil {
		return err
	}
	s, err := onMirror(req.Settings, d.state)
	if err != nil {
		return err
	}
	w, err := watchsetup.Prepare(ctx, m.Root, s, req.Host)
	if err != nil {
		return err
	}
	defer w.Close()
	w.Config.ClaimDirs = c.ClaimDirs()
	return m.run(ctx, w.Config)
}

// run runs the watcher of cfg until ctx ends or the mirror stops.
func (m *Mirror) run(ctx context.Context, cfg watcher.Config) error {
	wctx, stopWatcher := context.WithCancel(ctx)
	defer stopWatcher()
	go func() {
		select {
		case <-m.Ended:
			stopWatcher()
		case <-wctx.Done():
		}
	}()
	err := watcher.Run(wctx, cfg)
	select {
	case <-m.Ended:
		if m.Err != nil {
			return fmt.Errorf("watch: mirror: %w", m.Err)
		}
	default:
	}
	return err
}

// dial is what watch --remote dials the bridge with.
type dial struct {
	signer *signing.Signer
	logger *slog.Logger
	nats   natsbus.Options
	state  string // absolute
}

// dialing checks req (every setting, the key it must have, a NATS
// server, a state directory) and returns what to dial with.
func dialing(req Request) (*dial, error) {
	s, getenv := req.Settings, req.Host.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	conf := s.Conf()
	if err := conf.Check(); err != nil {
		return nil, invalid("watch: %v", err)
	}
	signer, err := signing.LoadAgentKey(s.Key, s.Agent, getenv)
	if err != nil {
		return nil, invalid("watch: %v", err)
	}
	if signer == nil {
		// Everything it writes goes through a bridge, which writes only
		// what the agent's key signed.
		return nil, invalid("watch --remote: %v", remote.ErrNoKey)
	}
	level, _ := conf.Level()
	logger := slog.New(slog.NewTextHandler(stderr(req.Host), &slog.HandlerOptions{Level: level})).With("agent", s.Agent)
	if s.NATS == nil || s.NATS.URL == "" {
		return nil, invalid("watch --remote: no NATS server: use --nats URL or set NATS_URL")
	}
	o := *s.NATS
	o.Name, o.Logger = natsbus.ConnName(s.Agent, watchsetup.Hostname()), logger
	o.KeepTrying = true // started before the server: wait for it
	state := cmp.Or(req.State, remote.DefaultStateDir(s.Agent, getenv))
	if state == "" {
		return nil, invalid("watch --remote: no state directory: use --state-dir or set HOME")
	}
	// The model's CLI and its collab commands run in --workdir.
	if state, err = absPath(state); err != nil {
		return nil, fmt.Errorf("watch: --state-dir: %w", err)
	}
	return &dial{signer: signer, logger: logger, nats: o, state: state}, nil
}

func invalid(format string, args ...any) error {
	return errkind.New(errkind.Invalid, format, args...)
}

// onMirror is s for the watcher on the mirror of state: no NATS (the
// mirror carries its writes and wakes it through the local disk), and
// the model's MCP tools and collab commands through the bridge with
// this host's state.
func onMirror(s watchsetup.Settings, state string) (watchsetup.Settings, error) {
	// The model's MCP tools (--mcp) go through the bridge with this
	// host's state, as collab mcp --remote; their --root is the mirror.
	// They sign with the watcher's key: a --key flag is passed on (the
	// variable reaches them by itself).
	key, err := absPath(s.Key)
	if err != nil {
		return s, fmt.Errorf("watch: --key: %w", err)
	}
	keyring, err := absPath(s.Keyring)
	if err != nil {
		return s, fmt.Errorf("watch: --keyring: %w", err)
	}
	s.MCPArgs = append([]string{"--remote", "--state-dir", state}, watchsetup.NATSArgs(s.NATS)...)
	s.Key = key // the runs' COLLAB_KEY too: they run in --workdir
	for _, f := range []struct{ flag, v string }{{"--key", key}, {"--keyring", keyring}} {
		if f.v != "" {
			s.MCPArgs = append(s.MCPArgs, f.flag, f.v)
		}
	}
	// The watcher writes no files on the mount and publishes nothing: the
	// mirror carries its writes, and wakes it through the local disk.
	s.NATS = nil
	if s.Keyring == "" {
		// The mirror wrote the keyring copy as this account.
		s.AllowWritableKeyring = true
	}
	// The model's own collab commands (send, read, who, status) go
	// through the bridge too, with this state's outbox; the key and the
	// NATS settings come from the variables the watcher has.
	s.RemoteState = state
	return s, nil
}

// absPath is p made absolute ("" stays ""): a path handed to a process
// that runs in another directory.
func absPath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	return filepath.Abs(p)
}
