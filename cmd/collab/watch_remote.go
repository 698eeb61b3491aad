package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/watcher"
)

// watch --remote: the watcher on a local mirror of the tree, its writes
// carried to the mount through a bridge.

// watchRemote is watch --remote: the ordinary watcher on the local mirror
// tree STATE/tree, its claims decided on the mount through the bridge.
// The mirror starts first, then the watcher once the mirror has caught
// up (at most mirrorCatchUp). On exit the watcher
// stops first (its grace, its OFFLINE heartbeat), then the mirror drains
// its outbox for at most remote.DrainBudget (what is left is sent by the
// next start).
func watchRemote(ctx context.Context, rf *remoteFlags, s watchSettings, getenv env, stderr io.Writer) error {
	// Refused before the mirror starts, not once it has caught up.
	d, err := remoteDialing(rf, s, getenv, stderr)
	if err != nil {
		return err
	}
	c, err := remote.Dial(ctx, d.nats, remote.Config{Agent: s.Agent, Signer: d.signer, StateDir: d.state, Logger: d.logger})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer c.Close()
	m, err := startMirror(ctx, c, s, d.state, d.logger)
	if err != nil {
		return err
	}
	defer m.stop() // after the watcher has stopped: it drains what it wrote
	if err := m.awaitCaughtUp(ctx, mirrorCatchUp); err != nil {
		return err
	}
	if s, err = onMirror(s, d.state); err != nil {
		return err
	}
	w, err := prepareWatch(ctx, m.root, s, getenv, stderr)
	if err != nil {
		return err
	}
	defer w.Close()
	w.Config.ClaimDirs = c.ClaimDirs()
	// A mirror that fails stops the watcher: it would answer blind.
	wctx, stopWatcher := context.WithCancel(ctx)
	defer stopWatcher()
	go func() {
		select {
		case <-m.ended:
			stopWatcher()
		case <-wctx.Done():
		}
	}()
	err = watcher.Run(wctx, w.Config)
	select {
	case <-m.ended:
		if m.err != nil {
			return fmt.Errorf("watch: mirror: %w", m.err)
		}
	default:
	}
	return err
}

// remoteDial is what watch --remote dials the bridge with.
type remoteDial struct {
	signer *signing.Signer
	logger *slog.Logger
	nats   natsbus.Options
	state  string // absolute
}

// remoteDialing checks s (every setting, the key it must have, a NATS
// server, a state directory) and returns what to dial with.
func remoteDialing(rf *remoteFlags, s watchSettings, getenv env, stderr io.Writer) (*remoteDial, error) {
	conf := s.conf()
	if err := conf.Check(); err != nil {
		return nil, usageErrorf("watch: %v", err)
	}
	signer, err := loadSigner(s.Key, s.Agent, getenv)
	if err != nil {
		return nil, usageErrorf("watch: %v", err)
	}
	if signer == nil {
		// Everything it writes goes through a bridge, which writes only
		// what the agent's key signed.
		return nil, usageErrorf("watch --remote: %v", remote.ErrNoKey)
	}
	level, _ := conf.Level()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With(keyAgent, s.Agent)
	o, ok := s.NATS.options(getenv, natsbus.ConnName(s.Agent, hostname()), logger)
	if !ok {
		return nil, usageErrorf("watch --remote: no NATS server: use --nats URL or set NATS_URL")
	}
	o.KeepTrying = true // started before the server: wait for it
	state := cmp.Or(rf.state, remote.DefaultStateDir(s.Agent, getenv))
	if state == "" {
		return nil, usageErrorf("watch --remote: no state directory: use --state-dir or set HOME")
	}
	// The model's CLI and its collab commands run in --workdir.
	if state, err = absPath(state); err != nil {
		return nil, fmt.Errorf("watch: --state-dir: %w", err)
	}
	return &remoteDial{signer: signer, logger: logger, nats: o, state: state}, nil
}

// onMirror is s for the watcher on the mirror of state: no NATS (the
// mirror carries its writes and wakes it through the local disk), and
// the model's MCP tools and collab commands through the bridge with
// this host's state.
func onMirror(s watchSettings, state string) (watchSettings, error) {
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
	s.MCPArgs = append([]string{"--remote", "--state-dir", state}, s.NATS.args()...)
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

// runningMirror is the mirror of watch --remote while it runs: its tree;
// ended, closed when it has stopped, err then saying why (nil: stopped);
// caught, closed once it first caught up (nil: no such signal); and stop,
// which ends it after a drain of at most remote.DrainBudget.
type runningMirror struct {
	root   tree.Root
	ended  <-chan struct{}
	caught <-chan struct{}
	err    error
	stop   func()
}

// mirrorCatchUp bounds the wait for the mirror's first catch-up before
// the watcher starts; past it the watcher starts anyway and its polls find
// what the mirror brings later.
const mirrorCatchUp = time.Minute

// awaitCaughtUp waits until the mirror has first caught up (the stream's
// pending messages in the mirror, the keyring copied), so the watcher
// starts with the keys and the messages it should see; at most max. A
// mirror that stops first is an error.
func (r *runningMirror) awaitCaughtUp(ctx context.Context, max time.Duration) error {
	if r.caught == nil {
		return nil
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-r.caught:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	case <-r.ended:
		if r.err != nil {
			return fmt.Errorf("watch: mirror: %w", r.err)
		}
		return errors.New("watch: the mirror stopped before it caught up")
	}
	return nil
}

// startMirror starts the mirror of s.Agent's channels under state. The
// mirror runs until
// stop, not until ctx: the watcher's last writes (the reply of a run
// finishing in its grace, the OFFLINE heartbeat) come after ctx is done.
// A variable: tests give watch --remote a stand-in.
var startMirror = func(ctx context.Context, c *remote.Client, s watchSettings, state string, logger *slog.Logger) (*runningMirror, error) {
	mc := remote.MirrorConfig{Client: c, Channels: s.Channels, Dir: filepath.Join(state, "tree"), Logger: logger}
	if s.Keyring != "" {
		// --keyring: verify with it, kill requests included; no copy.
		mc.LocalKeys = true
		mc.Verifier = signing.NewVerifier(openKeyring(tree.Root(mc.Dir), s.Keyring))
	}
	m, err := remote.NewMirror(mc)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ended := make(chan struct{})
	r := &runningMirror{root: m.Root(), ended: ended, caught: m.CaughtUp()}
	go func() {
		r.err = m.Run(mctx)
		if r.err == nil && mctx.Err() == nil {
			r.err = errors.New("the mirror stopped")
		}
		close(ended)
	}()
	r.stop = func() {
		cancel()
		<-ended
	}
	return r, nil
}
