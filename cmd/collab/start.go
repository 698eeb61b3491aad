package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/collabdev/collab/internal/service"
)

func runStart(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("start", helpText("start"), stderr)
	background := fs.Bool("background", false, "detach, and return once every agent is AWAKE")
	startTimeout := fs.Duration("start-timeout", time.Minute, "with --background, how long to wait for the agents to be AWAKE")
	tf := addTeamFlags(fs)
	if err := parseOne(fs, args, getenv, "want one workflow FILE (see 'collab start --help')"); err != nil {
		return err
	}
	if *background { // collab start with the same arguments but --background; back once every agent is AWAKE
		child := slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--background" || a == "--background=true" })
		st, err := tf.mount(getenv, stderr).StartWorkflow(ctx, service.StartRequest{Background: true, StartTimeout: *startTimeout, Args: child,
			TeamRequest: service.TeamRequest{File: fs.Arg(0), Instance: *tf.instance, Log: stderr}})
		if err != nil {
			return fmt.Errorf("start: %w", err)
		}
		_, err = fmt.Fprintf(stdout, "%s@%s: running in the background (pid %d, log %s)\n", st.Workflow, st.Instance, st.PID, st.Log)
		return err
	}
	root, team, err := tf.teamRequest(ctx, "start", fs.Arg(0), getenv, stderr)
	if err != nil {
		return err
	}
	running := func(st service.Started) {
		if st.Resumed {
			fmt.Fprintf(stdout, "%s@%s: resumed in channel %s\n", st.Workflow, st.Instance, st.Channel)
		} else {
			fmt.Fprintf(stdout, "%s@%s: running in channel %s (kickoff %s)\n", st.Workflow, st.Instance, st.Channel, map[bool]string{true: st.Kickoff, false: "none: waiting for the first message"}[st.Kickoff != ""])
		}
	}
	_, err = mount(root, stderr).StartWorkflow(ctx, service.StartRequest{TeamRequest: team, Args: args,
		Detached: getenv(service.EnvWorkflowChild) == "1", Running: running})
	return cmdErr("start", err)
}
