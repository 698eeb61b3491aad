package main

// What collab run and start share: their flags, and each workflow
// agent's watcher made as collab watch makes one (the team itself is
// run by the service layer: service.Mount.RunWorkflow, StartWorkflow).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
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
// path; verifier is set to the first watcher's, for printing.
func (tf *teamFlags) teamRequest(ctx context.Context, cmd, path string, getenv env, stderr io.Writer, verifier **signing.Verifier) (tree.Root, service.TeamRequest, error) {
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
	watch := func(ctx context.Context, a workflow.Agent, id, ch string) (*watcher.Config, func(), error) {
		s := agentSettings(a, id, ch)
		s.Keyring, s.AllowWritableKeyring, s.NATS = *tf.keyring, *tf.allowWritable, tf.nats
		s.Poll, s.Heartbeat, s.Grace, s.LogLevel = *tf.poll, *tf.heartbeat, *tf.grace, *tf.logLevel
		p, err := prepareWatch(ctx, root, s, getenv, logs)
		if err != nil {
			var ee *exitError
			if errors.As(err, &ee) {
				return nil, nil, &exitError{code: ee.code, msg: fmt.Sprintf("%s: agent %s: %s", cmd, a.Name, ee.msg)}
			}
			return nil, nil, err
		}
		if *verifier == nil {
			*verifier = p.Config.Verifier
		}
		return &p.Config, p.Close, nil
	}
	return root, service.TeamRequest{
		File: path, Instance: *tf.instance, Env: getenv, Watch: watch, Log: stderr,
		From:    service.Actor{Name: from, Signer: signer, Hops: runenv.RunHops(getenv)},
		Resumed: getenv(service.EnvWorkflowResume) == "1",
	}, nil
}

// agentSettings are the watch settings of workflow agent a, whose id is
// id, in channel ch: a key left out keeps the zero value, the default.
func agentSettings(a workflow.Agent, id, ch string) watchSettings {
	s := watchSettings{
		Agent: id, Aliases: []string{a.Name}, Channels: []string{ch},
		CLI: a.CLI, Cmd: a.Cmd, CLIArgs: a.CLIArgs, Model: a.Model,
		SessionScope: a.SessionScope, Role: a.SystemPrompt, Memory: a.Memory,
		PromptTemplate: a.PromptTemplate, Workdir: a.Workdir, Trust: a.Trust,
	}
	set := func(dst *time.Duration, p *time.Duration) {
		if p != nil {
			*dst = *p
		}
	}
	set(&s.SessionTTL, a.SessionTTL)
	set(&s.Timeout, a.Timeout)
	setInt := func(dst *int, p *int) {
		if p != nil {
			*dst = *p
		}
	}
	setInt(&s.MaxTurns, a.MaxTurns)
	setInt(&s.MaxHops, a.MaxHops)
	setInt(&s.Rate, a.Rate)
	setInt(&s.PairRate, a.PairRate)
	if a.Context != nil {
		s.Context = cmp.Or(*a.Context, -1) // context: 0 is none, as --context 0
	}
	if a.BudgetUSD != nil {
		s.BudgetUSD = *a.BudgetUSD
	}
	if a.BudgetTokens != nil {
		s.BudgetTokens = *a.BudgetTokens
	}
	if a.PostErrors != nil {
		s.PostErrors = *a.PostErrors
	}
	if a.MCP != nil {
		s.MCP = *a.MCP
	}
	return s
}
