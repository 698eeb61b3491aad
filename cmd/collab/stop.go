package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/collabdev/collab/internal/service"
)

func runStop(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("stop", helpText("stop"), stderr)
	all := fs.Bool("all", false, "stop every running instance")
	timeout := fs.Duration("timeout", time.Minute, "how long to wait for the agents to be OFFLINE (then exit 3)")
	c := addCommon(fs, withRoot)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if *all == (fs.NArg() == 1) || fs.NArg() > 1 {
		return usageErrorf("stop: give one target (NAME@INSTANCE or @INSTANCE) or --all")
	}
	stopped, err := c.mount(getenv, stderr).StopWorkflow(ctx, service.StopRequest{Target: fs.Arg(0), All: *all, By: loginName(ctx), Wait: *timeout})
	if err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	for _, s := range stopped {
		fmt.Fprintf(stdout, "%s: stopped\n", s.ID())
	}
	return nil
}
