package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/registry"
)

// runAgent registers and unregisters an agent in the tree's registry.
var runAgent = subcommands("agent", same(runAgentSub, "register", "unregister"), nil)

func runAgentSub(ctx context.Context, sub string, args []string, getenv env, _ io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("agent "+sub, helpText("agent")+"\nFlags:\n", stderr)
	var r service.AgentRegistration
	if sub == "register" {
		fs.StringVar(&r.Runtime, "runtime", "", "the agent's runtime: claude_code, codex, a script… (required)")
		fs.StringVar(&r.Role, "role", "worker", "the agent's role")
		fs.StringSliceVar(&r.Capabilities, "capabilities", nil, "what it can do, one word each (repeat or comma-separate)")
		fs.StringVar(&r.Host, "host", "", "the host it runs on (default this host)")
	}
	asJSON := fs.Bool("json", false, "print the entry as JSON")
	c := addCommon(fs, withRoot, withKeyring, withKey)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("agent %s: give one agent NAME", sub)
	}
	id, err := service.AgentID(fs.Arg(0))
	if err != nil {
		return usageErrorf("agent %s: %v", sub, err)
	}
	signer, err := signing.LoadAgentKey(c.keyPath(), id, getenv) // none: unsigned
	if err != nil {
		return fmt.Errorf("agent %s: %w", sub, err)
	}
	cfg := mountConfig(c.tree(getenv), stderr)
	cfg.Verifier = c.verifier(cfg.Root, stderr)
	m, a := service.NewMount(cfg), service.Actor{Name: fs.Arg(0), Signer: signer}
	var e registry.Agent
	if sub == "register" {
		e, err = m.RegisterAgent(ctx, a, r)
	} else {
		e, err = m.UnregisterAgent(ctx, a)
	}
	if err != nil {
		return fmt.Errorf("agent %s: %w", sub, err)
	}
	// JSON: the entry as its file holds it.
	return show(stdout, *asJSON, e, fmt.Sprintf("%s %sed (%s, %s: %s)\n", workflow.Address(e.ID), sub, e.Role, e.Runtime, strings.Join(e.Capabilities, ",")))
}
