package main

// collab resume restarts the delegated agents of this host whose watcher
// is gone (service.Delegations.Resume), and the workflow instances started
// with start --background whose process is gone
// (service.Mount.ResumeWorkflows).

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/service"
)

func runResume(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("resume", helpText("resume"), stderr)
	dry := fs.Bool("dry-run", false, "only list what would be restarted")
	startTimeout := fs.Duration("start-timeout", time.Minute, "how long to wait for each agent to be AWAKE")
	c := addCommon(fs, withRoot)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	m := c.mount(getenv, stderr)
	res, err := m.Resume(ctx, service.ResumeRequest{DryRun: *dry, StartTimeout: *startTimeout})
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(stderr, "collab: resume: skipping session %s: its record is not this account's\n", s.ID)
	}
	var failed []string
	for _, f := range res.Failed {
		fmt.Fprintf(stderr, "collab: resume: session %s: %v\n", f.Session.ID, f.Err)
		failed = append(failed, f.Session.ID)
	}
	for _, s := range res.Restarted {
		if *dry {
			fmt.Fprintf(stdout, "would restart session %s (%s)\n", s.ID, s.Agent)
		} else {
			fmt.Fprintf(stdout, "session %s: %s restarted (pid %d)\n", s.ID, s.Agent, s.PID)
		}
	}
	failed = append(failed, printResumed(m.ResumeWorkflows(ctx, service.WorkflowResumeRequest{Dry: *dry, Timeout: *startTimeout}), stdout, stderr)...)
	if len(failed) > 0 {
		return fmt.Errorf("resume: not restarted: %s", strings.Join(failed, ", "))
	}
	return nil
}

// printResumed prints what service.Mount.ResumeWorkflows did, as collab
// resume does, and returns the names of the instances that failed.
func printResumed(res []service.WorkflowResumed, stdout, stderr io.Writer) (failed []string) {
	for _, r := range res {
		switch r.Outcome {
		case service.ResumeRestarted:
			fmt.Fprintf(stdout, "%s restarted (pid %d)\n", r.Name, r.PID)
		case service.ResumeWould:
			fmt.Fprintf(stdout, "would restart %s\n", r.Name)
		case service.ResumeSkipped:
			fmt.Fprintf(stderr, "collab: resume: skipping %s: %v\n", r.Name, r.Err)
		default:
			fmt.Fprintf(stderr, "collab: resume: %s: %v\n", r.Name, r.Err)
			failed = append(failed, r.Name)
		}
	}
	return failed
}
