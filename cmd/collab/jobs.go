package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
)

var runJobs = subcommands("jobs", map[string]runFunc{"show": runJobsShow, "kill": runJobsKill}, runJobsList)

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
	rows, now := [][]string{{"JOB", "AGENT", "STATUS", "STARTED", "TOOK", "CLI", "COST", "FROM", "CHANNEL"}}, time.Now()
	for i, j := range all {
		j.Agent, j.From, j.Events = workflow.Address(j.Agent), workflow.Address(j.From), nil // jobs show has the events
		all[i] = j
		took, cost := "-", "-"
		switch {
		case !j.Ended.IsZero():
			took = j.Ended.Sub(j.Started).Round(100 * time.Millisecond).String()
		case j.Status == jobs.Running:
			took = now.Sub(j.Started).Round(time.Second).String() + "…"
		}
		if j.CostUSD > 0 {
			cost = fmt.Sprintf("$%.4f", j.CostUSD)
		}
		rows = append(rows, []string{j.ID, j.Agent, j.Status, j.Started.Local().Format(time.DateTime), took, j.CLI, cost, j.From, j.Channel})
	}
	if *asJSON {
		return writeJSON(stdout, all)
	}
	return printTable(stdout, rows)
}

func runJobsShow(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("jobs show", stderr)
	since := fs.String("since", "", "only events at or after this time (RFC 3339) or this long ago (10m)")
	asJSON := fs.Bool("json", false, "print the record as JSON")
	of := fs.String("agent", "", "only this agent's jobs")
	alias(fs, "of", "agent")
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
	if *asJSON {
		return writeJSON(stdout, j)
	}
	fmt.Fprintf(stdout, "job %s  agent %s@%s  %s  cli %s\n", j.ID, j.Agent, j.Host, j.Status, j.CLI)
	fmt.Fprintf(stdout, "message %s from %s in %s\n", j.Message, j.From, j.Channel)
	if j.Session != "" {
		fmt.Fprintf(stdout, "session %s (resumed: %v)\n", j.Session, j.Resumed)
	}
	if j.CostUSD > 0 || j.Usage.Input > 0 {
		fmt.Fprintf(stdout, "cost $%.4f  tokens in %d out %d\n", j.CostUSD, j.Usage.Input, j.Usage.Output)
	}
	if j.Reply != "" {
		fmt.Fprintf(stdout, "reply %s\n", j.Reply)
	}
	if j.Error != "" {
		fmt.Fprintf(stdout, "error %s\n", j.Error)
	}
	for _, e := range j.Events {
		line := e.Text
		if e.Tool != "" {
			line = e.Tool + " " + line
		}
		line = strings.ReplaceAll(strings.TrimSpace(line), "\n", " ⏎ ")
		if len(line) > 200 {
			line = line[:200] + "…"
		}
		fmt.Fprintf(stdout, "%s  %-11s %s\n", e.Time.Local().Format("15:04:05.000"), e.Kind, line)
	}
	return nil
}

func runJobsKill(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
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
			fmt.Sprintf("asked %s's watcher on %s to stop %s", agent, j.Host, j.ID))
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

// show prints v as JSON (writeJSON) with asJSON, else the line text.
func show(w io.Writer, asJSON bool, v any, text string) error {
	if asJSON {
		return writeJSON(w, v)
	}
	_, err := fmt.Fprintln(w, text)
	return err
}

// jsonLine prints v as one line of JSON.
func jsonLine(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
