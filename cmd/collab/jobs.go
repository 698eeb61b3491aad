package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

func runJobs(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "show":
			return runJobsShow(args[1:], getenv, stdout, stderr)
		case "kill":
			return runJobsKill(ctx, args[1:], getenv, stdout, stderr)
		}
	}
	fs := newFlags("jobs", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab jobs [--agent A] [--json]
       collab jobs show JOB [--agent|--of A] [--since TIME] [--json]
       collab jobs kill JOB [--of A] [--agent BY] [--json] [NATS flags]

List the model runs of the watchers (the running ones and the last 20
finished per agent), show one with its events, or stop a running one from
any host. JOB is a job id, or the id of the message a job answers (its
newest job); --agent (show) or --of (kill) narrows it to one agent's jobs,
and an id that names jobs of two agents is refused. A job whose record
says running but whose watcher is gone (its heartbeat stale or OFFLINE,
another watcher instance on its host, or on this host its pid dead) is
shown as interrupted. With NATS configured (--nats or NATS_URL), kill also tells the
watcher over NATS so that it acts at once rather than at its next poll.
The request names who asked: --agent, then COLLAB_AGENT, then the login
name, else "someone"; it is signed with that agent's key when it has one
(--key). A job may be killed by its agent, by the sender of the message it
answers, or by the tree's admin (root, or the account that owns the tree's
root folder, when that is not the job's own account); a requester with keys
must sign. The watcher ignores any other request, so this refuses it up
front (exit 4), as it refuses a request while another requester's is
pending.

Flags:
`)
		fs.PrintDefaults()
	}
	agent := fs.String("agent", "", "only this agent's jobs")
	asJSON := fs.Bool("json", false, "print JSON")
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("jobs: unexpected argument %q (subcommands: show, kill)", fs.Arg(0))
	}
	root := tree.Resolve(*rootf, getenv)
	var all []jobs.Job
	var err error
	if *agent != "" {
		if err := tree.CheckName("agent", *agent); err != nil {
			return usageErrorf("jobs: %v", err)
		}
		all, err = jobs.List(root, *agent)
	} else {
		all, err = jobs.ListAll(root)
	}
	if err != nil {
		return err
	}
	if all == nil {
		all = []jobs.Job{} // --json: [] when there are none
	}
	jobs.Judge(all, watchOf(root))
	if *asJSON {
		for i := range all {
			all[i].Events = nil // jobs show has them
		}
		return writeJSON(stdout, all)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tAGENT\tSTATUS\tSTARTED\tTOOK\tCLI\tCOST\tFROM\tCHANNEL")
	now := time.Now()
	for _, j := range all {
		took := "-"
		switch {
		case !j.Ended.IsZero():
			took = j.Ended.Sub(j.Started).Round(100 * time.Millisecond).String()
		case j.Status == jobs.Running:
			took = now.Sub(j.Started).Round(time.Second).String() + "…"
		}
		cost := "-"
		if j.CostUSD > 0 {
			cost = fmt.Sprintf("$%.4f", j.CostUSD)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Agent, j.Status,
			j.Started.Local().Format("2006-01-02 15:04:05"), took, j.CLI, cost, j.From, j.Channel)
	}
	return tw.Flush()
}

func runJobsShow(args []string, getenv env, stdout, stderr io.Writer) error {
	fs := newFlags("jobs show", stderr)
	since := fs.String("since", "", "only events at or after this time (RFC 3339) or this long ago (10m)")
	asJSON := fs.Bool("json", false, "print the record as JSON")
	of := fs.String("agent", "", "only this agent's jobs")
	alias(fs, "of", "agent")
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("jobs show: give one job id")
	}
	root := tree.Resolve(*rootf, getenv)
	j, err := lookupJob("jobs show", root, *of, fs.Arg(0))
	if err != nil {
		return err
	}
	if *since != "" {
		cut, err := parseSince(*since, time.Now())
		if err != nil {
			return err
		}
		j.Events = slices.DeleteFunc(j.Events, func(e jobEvent) bool { return e.Time.Before(cut) })
	}
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

func runJobsKill(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	fs := newFlags("jobs kill", stderr)
	agent := agentFlag(fs, "", "who asks", true)
	of := fs.String("of", "", "only this agent's jobs")
	asJSON := fs.Bool("json", false, `print {"job", "agent", "host", "by"}`)
	rootf := rootFlag(fs)
	keyf := keyFlag(fs)
	ringf := keyringFlag(fs)
	nf := addNATSFlags(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("jobs kill: give one job id")
	}
	root := tree.Resolve(*rootf, getenv)
	j, err := lookupJob("jobs kill", root, *of, fs.Arg(0))
	if err != nil {
		return err
	}
	if j.Done() {
		return fmt.Errorf("jobs kill: %s is %s, not running", j.ID, j.Status)
	}
	// Who asks is only recorded: an unnamed request is still a request.
	who := cmp.Or(*agent, loginName(ctx), "someone")
	signer, err := loadSigner(*keyf, who, getenv)
	if err != nil {
		return fmt.Errorf("jobs kill: %w", err)
	}
	if err := mayKill(root, j, who, signer, openKeyring(root, *ringf), stderr); err != nil {
		return &exitError{code: exitRefused, msg: "jobs kill: " + err.Error()}
	}
	var bus *natsbus.Bus
	if o, ok := nf.options(getenv, natsbus.ConnName(who, hostname()), commandLogger(stderr)); ok {
		// Before the file: bad credentials fail before anything is asked.
		var err error
		if bus, err = connectOptional(ctx, o, stderr); err != nil {
			return fmt.Errorf("jobs kill: %w", err)
		}
		if bus != nil {
			defer bus.Close()
		}
	}
	// The file is the request; NATS only makes the watcher look now.
	err = jobs.RequestKill(root, j.Agent, j.ID, who, signer)
	if errors.Is(err, jobs.ErrKillPending) {
		return &exitError{code: exitRefused, msg: "jobs kill: " + err.Error()}
	}
	if err != nil {
		return fmt.Errorf("jobs kill: %w", err)
	}
	if bus != nil {
		if err := bus.PublishKill(ctx, j.Agent, natsbus.KillRequest{Job: j.ID, By: who, Host: hostname()}); err != nil {
			fmt.Fprintf(stderr, "collab: warning: asked by file only (the watcher sees it at its next poll): %v\n", err)
		}
	}
	if *asJSON {
		return writeJSON(stdout, map[string]string{"job": j.ID, "agent": j.Agent, "host": j.Host, "by": who})
	}
	fmt.Fprintf(stdout, "asked %s's watcher on %s to stop %s\n", j.Agent, j.Host, j.ID)
	return nil
}

// mayKill applies jobs.MayKill to a request by who, signed with signer,
// as a watcher under the default trust policy will judge it (it cannot
// know a watcher run with another --trust): the admin is this account
// when it is root or owns the tree's root folder, and does not run the job.
func mayKill(root tree.Root, j jobs.Job, who string, signer *signing.Signer, ring *keyring.Ring, stderr io.Writer) error {
	r := jobs.Asking(verifierFor(root, ring, stderr), j.Agent, j.ID, who, signer)
	r.Admin = jobs.Admin(root, os.Geteuid(), jobs.Runner(root, j.Agent, j.ID))
	return jobs.MayKill(j, r)
}

type jobEvent = modelcli.Event

// lookupJob finds the job id names (a job id, or the id of the message it
// answers) among agent's jobs ("": every agent's), with its status as it
// stands (interrupted if its watcher is gone). An ambiguous or malformed
// id is a usage error of command cmd.
func lookupJob(cmd string, root tree.Root, agent, id string) (jobs.Job, error) {
	if agent != "" {
		if err := tree.CheckName("agent", agent); err != nil {
			return jobs.Job{}, usageErrorf("%s: %v", cmd, err)
		}
	}
	j, err := jobs.Lookup(root, agent, id)
	if errors.Is(err, tree.ErrBadName) || errors.Is(err, jobs.ErrAmbiguous) {
		return jobs.Job{}, usageErrorf("%s: %v", cmd, err)
	}
	if err != nil {
		return jobs.Job{}, err
	}
	j.Status = jobs.Observe(root, j.Agent, 0).Status(j)
	return j, nil
}

// watchOf returns what this host knows of each agent's watcher, to judge
// its running jobs.
func watchOf(root tree.Root) func(agent string) jobs.Watch {
	return func(agent string) jobs.Watch { return jobs.Observe(root, agent, 0) }
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

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
