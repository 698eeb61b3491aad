package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/collabdev/collab/internal/agent/join"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/envflag"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// runJoin runs the person's model CLI in this terminal as an agent on the
// bus (package join).
func runJoin(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("join", helpText("join"), stderr)
	agent := agentFlag(fs, "", "the agent this session is", true)
	chans := fs.StringArray("channel", nil, "channel to join, repeatable; the first is where the session posts")
	envflag.FromEnv(fs, "channel", envChannel)
	cli := fs.String("cli", "claude", "the CLI to run: claude, codex or gemini")
	poll := fs.Duration("poll", join.DefaultPoll, "how often to look for new messages")
	trust := fs.String("trust", string(signing.DefaultPolicy), "which senders' messages are shown as theirs: any, known or signed (the others are shown as forged)")
	c := addCommon(fs, withRoot, withKeyring, withKey, withNATS)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	mech, err := join.ForCLI(*cli, fs.Args())
	if err != nil {
		return usageErrorf("join: %v", err)
	}
	root := c.tree(getenv)
	signer, err := signing.LoadAgentKey(c.keyPath(), *agent, getenv) // none: unsigned
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	cfg := join.Config{Root: root, Agent: *agent, Channels: *chans, Signer: signer, Verifier: c.verifier(root, stderr),
		Trust: signing.Policy(*trust), Poll: *poll, Getenv: getenv}
	if o, ok := c.nf.options(getenv, natsbus.ConnName(*agent, hostname()), nil); ok {
		cfg.NATS = &o
	}
	// A terminal closed (SIGHUP) ends the session as cleanly as a signal
	// to stop.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stop()
	err = join.Run(ctx, cfg, mech, join.Stdio{In: stdin, Out: stdout, Err: stderr})
	if ee := (*join.ExitError)(nil); errors.As(err, &ee) {
		return &exitError{code: ee.Code}
	}
	return err
}

// runJoinHook is a joined CLI's hook (collab join-hook --cli CLI), run by
// the CLI, never by a person.
func runJoinHook(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) != 2 || args[0] != "--cli" {
		return usageErrorf("join-hook: run by a joined CLI as join-hook --cli CLI")
	}
	if code := join.Hook(ctx, args[1], getenv(join.SocketEnv), stdin, stdout, stderr); code != 0 {
		return &exitError{code: code}
	}
	return nil
}
