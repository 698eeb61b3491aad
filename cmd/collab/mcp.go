package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
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
	fromEnv(fs, "delegate-cmd", service.EnvDelegateCmd)
	keyf := keyFlag(fs)
	ringf := keyringFlag(fs)
	nf := addNATSFlags(fs)
	rootf := rootFlag(fs)
	rf := addRemoteFlags(fs)
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
	signer, err := signing.LoadAgentKey(*keyf, *agent, getenv)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg := mcpserver.Config{Agent: *agent, Channel: *ch, Host: hostname(), Logger: logger, Poll: *poll, Signer: signer,
		// Inside a watcher's model run, what the agent sends is one hop
		// deeper than the message it answers.
		Hops: runenv.RunHops(getenv)}
	cfg.Root, cfg.Verifier = mcpTree(rf, fs.Changed("root"), *rootf, *ringf, *agent, getenv, stderr)
	// Through a bridge everything it writes must be signed (needKey).
	svc, err := openService(ctx, serviceSpec{cmd: "mcp", agent: *agent, root: cfg.Root, rf: rf, nf: nf, keyPath: *keyf, needKey: true,
		verifier: cfg.Verifier, nats: true, logger: logger, connName: *agent + "-mcp"}, getenv, stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	cfg.Remote, cfg.Service = svc.Client, svc.Service
	if !svc.remote() {
		def := service.DelegateDefaultsFrom(getenv)
		def.Cmd = *delegateCmd
		cfg.Service = service.WithDelegateDefaults(svc.Service, def)
	}
	return mcpserver.ServeStdio(ctx, cfg, stdin, stdout)
}

// mcpTree is the tree the tools of mcp read and the verifier they judge
// signatures with: on the mount --root and its keyring (verifierFor);
// with --remote this host's own tree (remote.LocalTree), whose keyring
// copy the mirror wrote as this account unless --keyring names another.
func mcpTree(rf *remoteFlags, rootSet bool, rootFlag, ringFlag, agent string, getenv env, stderr io.Writer) (tree.Root, *signing.Verifier) {
	if !rf.on {
		root := tree.Resolve(rootFlag, getenv)
		return root, verifierFor(root, keyring.In(root, ringFlag), stderr)
	}
	root := remote.LocalTree(rf.stateDir(agent, getenv), rootSet, rootFlag)
	if ringFlag == "" {
		return root, signing.NewVerifier(keyring.In(root, ""))
	}
	return root, verifierFor(root, keyring.In(root, ringFlag), stderr)
}
