package main

// The wiring of --remote (COLLAB_REMOTE=1): send, read, who and status on
// a host without the mount, through a bridge (internal/transport/remote).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
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
