package main

// What collab run and start share: their flags and their request (the
// team, each agent's watcher included, is run by the service layer:
// service.Mount.RunWorkflow, StartWorkflow).

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/watcher"
)

// wfMount is the service on the tree at root, for the workflow commands.
func wfMount(root tree.Root) *service.Mount {
	return service.NewMount(service.Config{Root: root, Host: hostname()})
}

// teamFlags are the flags run and start share.
type teamFlags struct {
	instance      *string
	agent         *string
	verbose       *bool
	root          *string
	keyring       *string
	allowWritable *bool
	poll          *time.Duration
	heartbeat     *time.Duration
	grace         *time.Duration
	logLevel      *string
	nats          *natsFlags
}

func addTeamFlags(fs *pflag.FlagSet) *teamFlags {
	return &teamFlags{
		instance:      fs.String("instance", "", "the instance's name (default: MMDD-HHMM-xx from the time)"),
		agent:         agentFlag(fs, "", "who posts the kickoff", true),
		verbose:       fs.Bool("verbose", false, "also show the watchers' logs on standard error"),
		keyring:       keyringFlag(fs),
		allowWritable: fs.Bool("allow-writable-keyring", false, "accept a keyring this account can write (a single-account setup)"),
		poll:          fs.Duration("poll", watcher.DefaultPoll, "the watchers' poll interval"),
		heartbeat:     fs.Duration("heartbeat", watcher.DefaultHeartbeat, "the watchers' presence heartbeat interval"),
		grace:         fs.Duration("grace", runenv.Grace, "on stop, how long a running CLI may finish"),
		logLevel:      fs.String("log-level", defaultLogLevel, "the watchers' log level: debug, info, warn or error"),
		nats:          addNATSFlags(fs),
		root:          rootFlag(fs),
	}
}

// teamRequest is the request of run or start (cmd) of the workflow at
// path.
func (tf *teamFlags) teamRequest(ctx context.Context, cmd, path string, getenv env, stderr io.Writer) (tree.Root, service.TeamRequest, error) {
	root := tree.Resolve(*tf.root, getenv)
	from, err := actingAgent(ctx, cmd, "sender", *tf.agent)
	if err != nil {
		return root, service.TeamRequest{}, err
	}
	signer, err := loadSigner("", from, getenv)
	if err != nil {
		return root, service.TeamRequest{}, fmt.Errorf("%s: %w", cmd, err)
	}
	logs := io.Discard
	if *tf.verbose {
		logs = stderr
	}
	return root, service.TeamRequest{
		File: path, Instance: *tf.instance, Env: getenv, Log: stderr,
		Watch: watchSettings{Keyring: *tf.keyring, AllowWritableKeyring: *tf.allowWritable, NATS: tf.nats.conn(getenv),
			Poll: *tf.poll, Heartbeat: *tf.heartbeat, Grace: *tf.grace, LogLevel: *tf.logLevel},
		WatchHost: watchHost(ctx, getenv, logs),
		From:      service.Actor{Name: from, Signer: signer, Hops: runenv.RunHops(getenv)},
		Resumed:   getenv(service.EnvWorkflowResume) == "1",
	}, nil
}
