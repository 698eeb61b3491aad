package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/envflag"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/transport/mcpserver"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

func runMCP(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("mcp", helpText("mcp"), stderr)
	agent := agentFlag(fs, "", "the agent every tool acts as", false)
	ch := needChannel(fs, "the channel")
	poll := fs.Duration("poll", delegate.DefaultPoll, "how often send_and_wait looks for the reply")
	verbose := fs.BoolP("verbose", "v", false, "log every failed tool call to standard error")
	delegateCmd := fs.String("delegate-cmd", "", "delegate_to_worktree: the command line of the delegated agent's CLI (collab delegate --cmd; "+service.EnvDelegateCmd+")")
	envflag.FromEnv(fs, "delegate-cmd", service.EnvDelegateCmd)
	c := addCommon(fs, withKey, withKeyring, withNATS, withRoot, withRemote)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	if err := namedAgent("mcp", *agent); err != nil {
		return err
	}
	if *poll <= 0 {
		return usageErrorf("mcp: --poll must be positive")
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	signer, err := signing.LoadAgentKey(c.keyPath(), *agent, getenv)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg := mcpserver.Config{Agent: *agent, Channel: *ch, Host: hostname(), Logger: logger, Poll: *poll, Signer: signer,
		// Inside a watcher's model run, what the agent sends is one hop
		// deeper than the message it answers.
		Hops: runenv.RunHops(getenv)}
	cfg.Root, cfg.Verifier = mcpTree(c, *agent, getenv, stderr)
	// Through a bridge everything it writes must be signed (needKey).
	sp := c.spec(getenv)
	sp.agent, sp.root, sp.needKey, sp.verifier, sp.nats, sp.logger, sp.connName = *agent, cfg.Root, true, cfg.Verifier, true, logger, *agent+"-mcp"
	return useService(ctx, sp, getenv, stderr, func(svc *openedService) error {
		cfg.Remote, cfg.Service = svc.Client, svc.Service
		if !svc.Remote() {
			def := service.DelegateDefaultsFrom(getenv)
			def.Cmd = *delegateCmd
			cfg.Service = service.WithDelegateDefaults(svc.Service, def)
		}
		return mcpserver.ServeStdio(ctx, cfg, stdin, stdout)
	})
}

// mcpTree is the tree the tools of mcp read and the verifier they judge
// signatures with: on the mount --root and its keyring (verifierFor);
// with --remote this host's own tree (remote.LocalTree), whose keyring
// copy the mirror wrote as this account unless --keyring names another.
func mcpTree(c *common, agent string, getenv env, stderr io.Writer) (tree.Root, *signing.Verifier) {
	if !c.remote() {
		root := c.tree(getenv)
		return root, c.verifier(root, stderr)
	}
	root := remote.LocalTree(c.rf.stateDir(agent, getenv), c.fs.Changed("root"), *c.root)
	if *c.ring == "" {
		return root, signing.NewVerifier(keyring.In(root, ""))
	}
	return root, c.verifier(root, stderr)
}
