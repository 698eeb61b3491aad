package main

// collab outbox: the writes a host without the mount keeps until a bridge
// takes them (internal/transport/remote).

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/collabdev/collab/internal/transport/remote"
)

func runOutbox(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("outbox", helpText("outbox"), stderr)
	agent := agentFlag(fs, "", "the agent whose outbox it is", true)
	asJSON := fs.Bool("json", false, "ls: print the entries as JSON")
	c := addCommon(fs, withRemote, withNATS)
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
	state := c.rf.stateDir(who, getenv)
	if state == "" {
		return usageErrorf("outbox: no state directory: use --state-dir or set HOME")
	}
	if sub == "flush" {
		// Opening resends the outbox and reports it.
		c.rf.on = true
		svc, err := openService(ctx, serviceSpec{cmd: "outbox flush", agent: who, rf: c.rf, nf: c.nf}, getenv, stderr)
		if err != nil {
			return err
		}
		defer svc.Close()
		if err := svc.Client.Queued(); err != nil {
			return fmt.Errorf("outbox flush: %w", err)
		}
		fmt.Fprintln(stdout, "outbox empty")
		return nil
	}
	l, err := remote.List(state)
	switch {
	case err != nil:
		return fmt.Errorf("outbox: %w", err)
	case *asJSON:
		return writeJSON(stdout, l)
	case l.Empty():
		fmt.Fprintf(stderr, "collab: the outbox %s is empty\n", filepath.Join(state, remote.OutboxDir))
	}
	for _, line := range l.Lines() {
		fmt.Fprintln(stdout, line)
	}
	return nil
}
