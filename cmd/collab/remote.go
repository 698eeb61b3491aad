package main

// The wiring of --remote (COLLAB_REMOTE=1): send, read, who and status on
// a host without the mount, through a bridge (internal/transport/remote).

import (
	"cmp"

	"github.com/spf13/pflag"

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
