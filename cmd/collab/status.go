package main

import (
	"context"
	"io"
	"time"

	"github.com/collabdev/collab/internal/service"
)

func runStatus(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	flags := cmdFlags("status", helpText("status"), stderr)
	ch := channelFlag(flags, "the message's channel (default: look in every channel)")
	asJSON := flags.Bool("json", false, "print the status as JSON: channel, id, from, to, time, broadcast, addressees")
	timeline := flags.Bool("timeline", false, "also each addressee's timeline: every stage's time, the gap from the one before, via and host")
	c := addCommon(flags, withRemote, withNATS, withRemoteAgent, withRoot, withKeyring)
	if err := parseOne(flags, args, getenv, "give one message id"); err != nil {
		return err
	}
	return c.use(ctx, "", getenv, stderr, func(svc *openedService) error {
		st, err := svc.Status(ctx, service.StatusRequest{Channel: *ch, ID: flags.Arg(0), Timeline: *timeline})
		if err != nil {
			return svc.fail("status", err)
		}
		if *asJSON {
			return writeJSON(stdout, st)
		}
		_, err = io.WriteString(stdout, service.StatusText(st, time.Now()))
		return err
	})
}
