package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/service"
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
	fmt.Fprintln(w, st.Header())
	if st.Broadcast {
		_, err := fmt.Fprintln(w, "broadcast: no addressee")
		return err
	}
	return printTable(w, st.Table(now))
}
