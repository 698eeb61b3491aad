package main

// collab outbox: the writes a host without the mount keeps until a bridge
// takes them (internal/transport/remote).

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/presence"
)

// outboxUsage is outbox's help, before its flags.
const outboxUsage = `Usage: collab outbox [ls|flush] --agent A [--remote] [--json]

The outbox of a host without the mount: the writes of 'collab send
--remote' that the bridge has not acknowledged yet, kept in
STATE/outbox/ (--state-dir), and those it refused, moved to
STATE/outbox/failed/ with the reason. Every remote command first resends
the outbox, oldest first, for at most 10 seconds.

  ls      list the waiting and the refused writes (the default)
  flush   resend the waiting writes now through the bridge (--nats); exit 5
          when some are still waiting because it cannot be reached

Flags:
`

func runOutbox(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("outbox", outboxUsage, stderr)
	agent := agentFlag(fs, "", "the agent whose outbox it is", true)
	asJSON := fs.Bool("json", false, "ls: print the entries as JSON")
	rf := addRemoteFlags(fs)
	nf := addNATSFlags(fs)
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
	state := rf.stateDir(who, getenv)
	if state == "" {
		return usageErrorf("outbox: no state directory: use --state-dir or set HOME")
	}
	if sub == "flush" {
		// remoteClient resends the outbox and reports it.
		c, err := remoteClient(ctx, "outbox flush", rf, nf, who, "", false, getenv, stderr)
		if err != nil {
			return err
		}
		defer c.Close()
		left, err := c.Outbox()
		if err == nil && len(left) > 0 {
			err = errkind.New(errkind.Queued, "outbox flush: %d write(s) still waiting in %s: the bridge cannot be reached", len(left), c.OutboxPath())
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "outbox empty")
		return nil
	}
	return listOutbox(state, *asJSON, stdout, stderr)
}

// listOutbox is outbox ls: the waiting and the refused writes of the
// outbox under state, as lines or as JSON.
func listOutbox(state string, asJSON bool, stdout, stderr io.Writer) error {
	l, err := remote.List(state)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, l)
	}
	for i, entries := range [][]remote.Entry{l.Waiting, l.Failed} {
		for _, e := range entries {
			line := fmt.Sprintf("%s  %s  %s  %s", []string{"waiting", "failed"}[i], cell(e.Op), tree.Printable(e.Describe()), presence.FormatTime(e.Queued))
			if e.Refused != "" {
				line += "  " + tree.Printable(e.Refused)
			}
			fmt.Fprintln(stdout, line)
		}
	}
	if l.Empty() {
		fmt.Fprintf(stderr, "collab: the outbox %s is empty\n", filepath.Join(state, remote.OutboxDir))
	}
	return nil
}
