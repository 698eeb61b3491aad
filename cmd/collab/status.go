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

func runStatus(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	flags := cmdFlags("status", helpText("status"), stderr)
	ch := channelFlag(flags, "the message's channel (default: look in every channel)")
	asJSON := flags.Bool("json", false, "print the status as JSON: channel, id, from, to, time, broadcast, addressees")
	c := addCommon(flags, withRemote, withNATS, withRemoteAgent, withRoot, withKeyring)
	if err := parseOne(flags, args, getenv, "give one message id"); err != nil {
		return err
	}
	return c.use(ctx, "", getenv, stderr, func(svc *openedService) error {
		st, err := svc.Status(ctx, service.StatusRequest{Channel: *ch, ID: flags.Arg(0)})
		if err != nil {
			return svc.fail("status", err)
		}
		if *asJSON {
			return writeJSON(stdout, st)
		}
		return statusText(stdout, st, time.Now())
	})
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
