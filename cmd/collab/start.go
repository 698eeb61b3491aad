package main

import (
	"context"
	"fmt"
	"io"
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
	if *background {
		return startBackground(ctx, args, fs.Arg(0), tf, *startTimeout, getenv, stdout, stderr)
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

// startBackground starts the team detached: collab start with the same
// arguments but --background, and returns once every agent is AWAKE.
func startBackground(ctx context.Context, args []string, path string, tf *teamFlags, timeout time.Duration, getenv env, stdout, stderr io.Writer) error {
	var child []string
	for _, a := range args {
		if a != "--background" && a != "--background=true" {
			child = append(child, a)
		}
	}
	root := tf.tree(getenv)
	st, err := mount(root, stderr).StartWorkflow(ctx, service.StartRequest{
		TeamRequest: service.TeamRequest{File: path, Instance: *tf.instance, Log: stderr},
		Background:  true, StartTimeout: timeout, Args: child,
	})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	fmt.Fprintf(stdout, "%s@%s: running in the background (pid %d, log %s)\n", st.Workflow, st.Instance, st.PID, st.Log)
	return nil
}
