package main

// What collab run and start share: their flags and their request (the
// team, each agent's watcher included, is run by the service layer:
// service.Mount.RunWorkflow, StartWorkflow).

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/watcher"
)

// teamFlags are the flags run and start share; watch holds those every
// agent's watcher shares.
type teamFlags struct {
	instance, agent *string
	verbose         *bool
	watch           watchSettings
	*common
}

func addTeamFlags(fs *pflag.FlagSet) *teamFlags {
	tf := &teamFlags{
		instance: fs.String("instance", "", "the instance's name (default: MMDD-HHMM-xxxx from the time and 4 random hex digits)"),
		agent:    agentFlag(fs, "", "who posts the kickoff", true),
		verbose:  fs.Bool("verbose", false, "also show the watchers' logs on standard error"),
	}
	w := &tf.watch
	tf.common = addCommon(fs, withKeyring)
	fs.BoolVar(&w.AllowWritableKeyring, "allow-writable-keyring", false, "accept a keyring this account can write (a single-account setup)")
	fs.DurationVar(&w.Poll, "poll", watcher.DefaultPoll, "the watchers' poll interval")
	fs.DurationVar(&w.Heartbeat, "heartbeat", watcher.DefaultHeartbeat, "the watchers' presence heartbeat interval")
	fs.DurationVar(&w.Grace, "grace", runenv.Grace, "on stop, how long a running CLI may finish")
	fs.StringVar(&w.LogLevel, "log-level", defaultLogLevel, "the watchers' log level: debug, info, warn or error")
	tf.add(withNATS, withRoot)
	return tf
}

// teamRequest is the request of run or start (cmd) of the workflow at
// path.
func (tf *teamFlags) teamRequest(ctx context.Context, cmd, path string, getenv env, stderr io.Writer) (tree.Root, service.TeamRequest, error) {
	root := tf.tree(getenv)
	from, err := actingAgent(ctx, cmd, "sender", *tf.agent)
	if err != nil {
		return root, service.TeamRequest{}, err
	}
	signer, err := signing.LoadAgentKey("", from, getenv)
	if err != nil {
		return root, service.TeamRequest{}, fmt.Errorf("%s: %w", cmd, err)
	}
	tf.watch.Keyring, tf.watch.NATS = *tf.ring, tf.nf.conn(getenv)
	logs := io.Discard
	if *tf.verbose {
		logs = stderr
	}
	return root, service.TeamRequest{
		File: path, Instance: *tf.instance, Env: getenv, Log: stderr,
		Watch: tf.watch, WatchHost: watchHost(ctx, getenv, logs),
		From:    service.Actor{Name: from, Signer: signer, Hops: runenv.RunHops(getenv)},
		Resumed: getenv(service.EnvWorkflowResume) == "1",
	}, nil
}
