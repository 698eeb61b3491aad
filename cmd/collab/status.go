package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/presence"
)

// statusUsage is status's help, before its flags.
const statusUsage = `Usage: collab status MSG-ID [--channel C] [--json]

Show where a message stands for each agent it is addressed to (to, its
@mentions, a known agent named by its first word):

  waiting        no watcher has noticed it yet (how long; the agent's presence)
  seen           a watcher noticed it and queued it
  claimed        a watcher claimed it (host, pid, since when)
  running        its model run goes on (the job id)
  answered       the reply (its id, how long it took)
  refused        a guard stopped it (max-hops, pair-rate, trust)
  failed         the model CLI failed (its error)
  undeliverable  no such agent: no registry entry, never present

A message to "all" that names no one is a broadcast: it has no addressee.
Without --channel (or $COLLAB_CHANNEL) the message is looked for in every
channel. Exit 0 when the message is found, 3 when it is not.

With --remote (or COLLAB_REMOTE=1), on a host without the mount, the
status is asked of a bridge over NATS (--nats), as --agent; --root is not
used.

Flags:
`

func runStatus(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	flags := cmdFlags("status", statusUsage, stderr)
	ch := channelFlag(flags, "the message's channel (default: look in every channel)")
	asJSON := flags.Bool("json", false, "print the status as JSON: channel, id, from, to, time, broadcast, addressees")
	rd := addReadFlags(flags)
	if err := parseOne(flags, args, getenv, "give one message id"); err != nil {
		return err
	}
	svc, err := rd.open(ctx, "status", getenv, stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	st, err := svc.Status(ctx, service.StatusRequest{Channel: *ch, ID: flags.Arg(0)})
	if err != nil {
		return svc.fail("status", err)
	}
	if *asJSON {
		return writeJSON(stdout, st)
	}
	return statusText(stdout, st, time.Now())
}

// statusText prints st as a header line and a table of addressees.
func statusText(w io.Writer, st delivery.Status, now time.Time) error {
	fmt.Fprintf(w, "%s in %s from %s to %s, %s\n", st.ID, cell(st.Channel), cell(workflow.Display(st.From)), cell(workflow.Display(st.To)), presence.FormatTime(st.Time))
	if st.Broadcast {
		_, err := fmt.Fprintln(w, "broadcast: no addressee")
		return err
	}
	t := [][]string{{"AGENT", "STATE", "DETAIL"}}
	for _, a := range st.Addressees {
		t = append(t, []string{tree.Printable(workflow.Display(a.Agent)), a.State, tree.Printable(a.Describe(now))})
	}
	return printTable(w, t)
}
