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
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/presence"
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

// stateDir is this host's state for agent: --state-dir, or its default.
func (f *remoteFlags) stateDir(agent string, getenv env) string {
	return cmp.Or(f.state, remote.DefaultStateDir(agent, getenv))
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
	signer, err := signing.LoadAgentKey(keyPath, agent, getenv)
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
	c, err := remote.Dial(ctx, o, remote.Config{Agent: agent, Signer: signer, StateDir: rf.stateDir(agent, getenv), Logger: logger})
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
	state := rf.stateDir(who, getenv)
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
		if err == nil && len(left) > 0 {
			err = errkind.New(errkind.Queued, "outbox flush: %d write(s) still waiting in %s: the bridge cannot be reached", len(left), c.OutboxPath())
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "outbox empty")
		return nil
	}
	return listOutbox(state, *asJSON, stdout, stderr)
}

// listOutbox is outbox ls: the waiting and the refused writes of the
// outbox under state, as lines or as JSON.
func listOutbox(state string, asJSON bool, stdout, stderr io.Writer) error {
	l, err := remote.List(state)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, l)
	}
	for i, entries := range [][]remote.Entry{l.Waiting, l.Failed} {
		for _, e := range entries {
			line := fmt.Sprintf("%s  %s  %s  %s", []string{"waiting", "failed"}[i], cell(e.Op), tree.Printable(e.Describe()), presence.FormatTime(e.Queued))
			if e.Refused != "" {
				line += "  " + tree.Printable(e.Refused)
			}
			fmt.Fprintln(stdout, line)
		}
	}
	if l.Empty() {
		fmt.Fprintf(stderr, "collab: the outbox %s is empty\n", filepath.Join(state, remote.OutboxDir))
	}
	return nil
}
