package main

// The wiring of --remote (COLLAB_REMOTE=1): send, read, who and status on
// a host without the mount, through a bridge (internal/transport/remote),
// and collab outbox.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

const envRemote = "COLLAB_REMOTE"

// remoteFlags are --remote and --state-dir.
type remoteFlags struct {
	on    bool
	state string
}

func addRemoteFlags(fs *pflag.FlagSet) *remoteFlags {
	f := &remoteFlags{}
	fs.BoolVar(&f.on, "remote", false, "no mount: go through a bridge over NATS (--nats); --root is not used")
	fromEnv(fs, "remote", envRemote)
	fs.StringVar(&f.state, "state-dir", "", "with --remote: this host's state for the agent, its outbox (default $XDG_STATE_HOME/collab/remote/AGENT)")
	fromEnv(fs, "state-dir", "COLLAB_STATE_DIR")
	return f
}

// remoteOn reports whether fs has --remote set (by flag or variable).
func remoteOn(fs *pflag.FlagSet) bool {
	f := fs.Lookup("remote")
	return f != nil && f.Value.String() == "true"
}

// remoteAgentFlag adds --agent to a command that has none of its own
// (read, who, status): with --remote it names whose subjects and state
// are used.
func remoteAgentFlag(fs *pflag.FlagSet) *string {
	return agentFlag(fs, "", "with --remote: the agent whose NATS subjects and local state are used", true)
}

// remoteClient connects as agent, signing with the agent's key (needKey:
// refuse without one), and first resends what the agent's outbox holds,
// reporting it on stderr. A NATS server that cannot be reached is not an
// error: the client queues its writes and its reads fail.
func remoteClient(ctx context.Context, cmd string, rf *remoteFlags, nf *natsFlags, agent, keyPath string, needKey bool, getenv env, stderr io.Writer) (*remote.Client, error) {
	signer, err := loadSigner(keyPath, agent, getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	if signer == nil && needKey {
		return nil, fmt.Errorf("%s: %w", cmd, remote.ErrNoKey)
	}
	logger := commandLogger(stderr)
	o, ok := nf.options(getenv, natsbus.ConnName(agent, hostname()), logger)
	if !ok {
		return nil, usageErrorf("%s --remote: no NATS server: use --nats URL or set NATS_URL", cmd)
	}
	state := rf.state
	if state == "" {
		state = remote.DefaultStateDir(agent, getenv)
	}
	c, err := remote.Dial(ctx, o, remote.Config{Agent: agent, Signer: signer, StateDir: state, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	reportFlush(c.Flush(ctx), c.OutboxPath(), stderr)
	return c, nil
}

// reportFlush says on stderr what a flush did, when it did anything.
func reportFlush(res remote.FlushResult, path string, stderr io.Writer) {
	if n := len(res.Sent); n > 0 {
		fmt.Fprintf(stderr, "collab: sent %d queued write(s) from the outbox %s\n", n, path)
	}
	for _, err := range res.Refused {
		fmt.Fprintf(stderr, "collab: warning: %v\n", err)
	}
	if res.Err != nil && !errors.Is(res.Err, remote.ErrQueued) {
		fmt.Fprintf(stderr, "collab: warning: outbox: %v\n", res.Err)
	}
}

// outboxUsage is outbox's help, before its flags.
const outboxUsage = `Usage: collab outbox [ls|flush] --agent A [--remote] [--json]

The outbox of a host without the mount: the writes of 'collab send
--remote' that the bridge has not acknowledged yet, kept in
STATE/outbox/ (--state-dir), and those it refused, moved to
STATE/outbox/failed/ with the reason. Every remote command first resends
the outbox, oldest first, for at most 10 seconds.

  ls      list the waiting and the refused writes (the default)
  flush   resend the waiting writes now through the bridge (--nats); exit 5
          when some are still waiting because it cannot be reached

Flags:
`

func runOutbox(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("outbox", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, outboxUsage)
		fs.PrintDefaults()
	}
	agent := agentFlag(fs, "", "the agent whose outbox it is", true)
	asJSON := fs.Bool("json", false, "ls: print the entries as JSON")
	rf := addRemoteFlags(fs)
	nf := addNATSFlags(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	sub := "ls"
	if fs.NArg() > 0 {
		sub = fs.Arg(0)
	}
	if fs.NArg() > 1 || sub != "ls" && sub != "flush" {
		return usageErrorf("outbox: use 'collab outbox ls' or 'collab outbox flush'")
	}
	who, err := actingAgent(ctx, "outbox", "agent", *agent)
	if err != nil {
		return err
	}
	state := rf.state
	if state == "" {
		state = remote.DefaultStateDir(who, getenv)
	}
	if state == "" {
		return usageErrorf("outbox: no state directory: use --state-dir or set HOME")
	}
	if sub == "flush" {
		// remoteClient resends the outbox and reports it.
		c, err := remoteClient(ctx, "outbox flush", rf, nf, who, "", false, getenv, stderr)
		if err != nil {
			return err
		}
		defer c.Close()
		left, err := c.Outbox()
		if err != nil {
			return err
		}
		if len(left) > 0 {
			return &exitError{code: exitQueued, msg: fmt.Sprintf("outbox flush: %d write(s) still waiting in %s: the bridge cannot be reached", len(left), c.OutboxPath())}
		}
		fmt.Fprintln(stdout, "outbox empty")
		return nil
	}
	return listOutbox(state, *asJSON, stdout, stderr)
}

// listOutbox is outbox ls: the waiting and the refused writes of the
// outbox under state, as lines or as JSON.
func listOutbox(state string, asJSON bool, stdout, stderr io.Writer) error {
	waiting, err := remote.Pending(state)
	if err != nil {
		return err
	}
	failed, err := remote.Refused(state)
	if err != nil {
		return err
	}
	if asJSON {
		type entry struct {
			remote.Entry
			File string `json:"file"`
		}
		out := map[string][]entry{"waiting": {}, "failed": {}}
		for _, e := range waiting {
			out["waiting"] = append(out["waiting"], entry{e, e.Name})
		}
		for _, e := range failed {
			out["failed"] = append(out["failed"], entry{e, e.Name})
		}
		return writeJSON(stdout, out)
	}
	for _, l := range []struct {
		what    string
		entries []remote.Entry
	}{{"waiting", waiting}, {"failed", failed}} {
		for _, e := range l.entries {
			line := fmt.Sprintf("%s  %s  %s  %s", l.what, cell(e.Op), tree.Printable(e.Describe()), presence.FormatTime(e.Queued))
			if e.Refused != "" {
				line += "  " + tree.Printable(e.Refused)
			}
			fmt.Fprintln(stdout, line)
		}
	}
	if len(waiting)+len(failed) == 0 {
		fmt.Fprintf(stderr, "collab: the outbox %s is empty\n", filepath.Join(state, remote.OutboxDir))
	}
	return nil
}

// watchRemote is watch --remote: the ordinary watcher on the local mirror
// tree STATE/tree, its claims decided on the mount through the bridge.
// The mirror starts first, then the watcher once the mirror has caught
// up (at most mirrorCatchUp). On exit the watcher
// stops first (its grace, its OFFLINE heartbeat), then the mirror drains
// its outbox for at most remote.DrainBudget (what is left is sent by the
// next start).
func watchRemote(ctx context.Context, rf *remoteFlags, s watchSettings, getenv env, stderr io.Writer) error {
	if err := namedAgent("watch", s.Agent); err != nil {
		return err
	}
	if len(s.Channels) == 0 {
		return usageErrorf("watch: no channel: use --channel or %s", envChannel)
	}
	for _, ch := range s.Channels {
		if err := tree.CheckName("channel", ch); err != nil {
			return usageErrorf("watch: %v", err)
		}
	}
	if s.MCP {
		// Refused before the mirror starts, not once it has caught up.
		if err := checkMCPCLI(cmp.Or(s.CLI, defaultCLI)); err != nil {
			return err
		}
	}
	signer, err := loadSigner(s.Key, s.Agent, getenv)
	if err != nil {
		return usageErrorf("watch: %v", err)
	}
	if signer == nil {
		// Everything it writes goes through a bridge, which writes only
		// what the agent's key signed.
		return usageErrorf("watch --remote: %v", remote.ErrNoKey)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cmp.Or(s.LogLevel, defaultLogLevel))); err != nil {
		return usageErrorf("watch: --log-level %q: use debug, info, warn or error", s.LogLevel)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With(keyAgent, s.Agent)
	o, ok := s.NATS.options(getenv, natsbus.ConnName(s.Agent, hostname()), logger)
	if !ok {
		return usageErrorf("watch --remote: no NATS server: use --nats URL or set NATS_URL")
	}
	state := rf.state
	if state == "" {
		state = remote.DefaultStateDir(s.Agent, getenv)
	}
	if state == "" {
		return usageErrorf("watch --remote: no state directory: use --state-dir or set HOME")
	}
	// The model's CLI and its collab commands run in --workdir.
	state, err = absPath(state)
	if err != nil {
		return fmt.Errorf("watch: --state-dir: %w", err)
	}
	o.KeepTrying = true // started before the server: wait for it
	c, err := remote.Dial(ctx, o, remote.Config{Agent: s.Agent, Signer: signer, StateDir: state, Logger: logger})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer c.Close()
	m, err := startMirror(ctx, c, s, state, logger)
	if err != nil {
		return err
	}
	defer m.stop() // after the watcher has stopped: it drains what it wrote
	if err := m.awaitCaughtUp(ctx, mirrorCatchUp); err != nil {
		return err
	}
	// The model's MCP tools (--mcp) go through the bridge with this
	// host's state, as collab mcp --remote; their --root is the mirror.
	// They sign with the watcher's key: a --key flag is passed on (the
	// variable reaches them by itself).
	key, err := absPath(s.Key)
	if err != nil {
		return fmt.Errorf("watch: --key: %w", err)
	}
	keyring, err := absPath(s.Keyring)
	if err != nil {
		return fmt.Errorf("watch: --keyring: %w", err)
	}
	s.MCPArgs = append([]string{"--remote", "--state-dir", state}, s.NATS.args()...)
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
	w, err := prepareWatch(ctx, m.root, s, getenv, stderr)
	if err != nil {
		return err
	}
	defer w.Close()
	w.Config.ClaimDirs = c.ClaimDirs()
	// The model's own collab commands (send, read, who, status) go
	// through the bridge too, with this state's outbox; the key and the
	// NATS settings come from the variables the watcher has.
	w.Config.Env = append(w.Config.Env, envRemote+"=1", "COLLAB_STATE_DIR="+state)
	if key != "" {
		w.Config.Env = append(w.Config.Env, envKey+"="+key)
	}
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
