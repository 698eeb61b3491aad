package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/envflag"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
)

var runJobs = subcommands("jobs", map[string]subFunc{"show": runJobsShow, "kill": runJobsKill}, runJobsList)

func runJobsList(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("jobs", helpText("jobs"), stderr)
	agent := fs.String("agent", "", "only this agent's jobs")
	asJSON := fs.Bool("json", false, "print JSON")
	c := addCommon(fs, withRoot)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("jobs: unexpected argument %q (subcommands: show, kill)", fs.Arg(0))
	}
	all, err := c.mount(getenv, stderr).Jobs(ctx, service.JobQuery{Agent: *agent})
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	for i, j := range all {
		all[i].Agent, all[i].From, all[i].Events = workflow.Address(j.Agent), workflow.Address(j.From), nil // jobs show has the events
	}
	if *asJSON {
		return writeJSON(stdout, all)
	}
	return printTable(stdout, service.JobsTable(all, time.Now()))
}

func runJobsShow(ctx context.Context, _ string, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("jobs show", stderr)
	since := fs.String("since", "", "only events at or after this time (RFC 3339) or this long ago (10m)")
	asJSON := fs.Bool("json", false, "print the record as JSON")
	of := fs.String("agent", "", "only this agent's jobs")
	envflag.Alias(fs, "of", "agent")
	c := addCommon(fs, withRoot)
	if err := parseOne(fs, args, getenv, "give one job id"); err != nil {
		return err
	}
	q := service.JobQuery{Agent: *of}
	if *since != "" {
		var err error
		if q.Since, err = parseSince(*since, time.Now()); err != nil {
			return err
		}
	}
	j, err := c.mount(getenv, stderr).Job(ctx, q, fs.Arg(0))
	if err != nil {
		return exitAs(exitFailure, fmt.Errorf("jobs show: %w", err), errkind.NotFound)
	}
	j.Agent, j.From = workflow.Address(j.Agent), workflow.Address(j.From)
	return show(stdout, *asJSON, j, service.JobText(j))
}

func runJobsKill(ctx context.Context, _ string, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("jobs kill", stderr)
	agent := agentFlag(fs, "", "who asks", true)
	of := fs.String("of", "", "only this agent's jobs")
	asJSON := fs.Bool("json", false, `print {"job", "agent", "host", "by"}`)
	c := addCommon(fs, withRoot, withKey, withKeyring, withNATS)
	if err := parseOne(fs, args, getenv, "give one job id"); err != nil {
		return err
	}
	// Who asks is only recorded: an unnamed request is still a request.
	who := cmp.Or(*agent, loginName(ctx), "someone")
	signer, err := signing.LoadAgentKey(c.keyPath(), who, getenv)
	if err != nil {
		return fmt.Errorf("jobs kill: %w", err)
	}
	// NATS before the kill file: bad credentials fail before anything is asked.
	sp := c.judged(getenv, stderr)
	sp.agent, sp.nats = who, true
	return useService(ctx, sp, getenv, stderr, func(svc *openedService) error {
		k, told, err := service.KillJobNow(ctx, svc, svc.Bus, hostname(), service.Actor{Name: who, Signer: signer}, service.KillRequest{Job: fs.Arg(0), Of: *of, Local: true})
		if err != nil {
			// Nothing to stop: exit 1, as this command documents.
			err = fmt.Errorf("jobs kill: %w", err)
			if errors.Is(err, service.ErrNotRunning) {
				return &exitError{code: exitFailure, msg: err.Error()}
			}
			return exitAs(exitFailure, err, errkind.NotFound)
		}
		if told != nil {
			fmt.Fprintf(stderr, "collab: warning: asked by file only (the watcher sees it at its next poll): %v\n", told)
		}
		j, agent := k.Job, workflow.Address(k.Job.Agent)
		return show(stdout, *asJSON, map[string]string{"job": j.ID, "agent": agent, "host": j.Host, "by": k.By},
			fmt.Sprintf("asked %s's watcher on %s to stop %s\n", agent, j.Host, j.ID))
	})
}

// parseSince reads a time (RFC 3339) or a duration ago.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, usageErrorf("--since %q is neither a time (2026-01-11T16:33:15Z) nor a duration (10m)", s)
}
