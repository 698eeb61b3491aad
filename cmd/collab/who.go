package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/envflag"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/presence"
)

func runWho(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	flags := cmdFlags("who", helpText("who"), stderr)
	asJSON := flags.Bool("json", false, "print a JSON array: agent, state, age_seconds, role, verdict, status (the heartbeat as written)")
	staleAfter := envflag.Seconds(presence.DefaultStaleAfter)
	flags.Var(&staleAfter, "stale-after", "show an AWAKE agent as STALE when its heartbeat is older than this (a duration, or seconds)")
	envflag.FromEnv(flags, "stale-after", "COLLAB_STALE_AFTER")
	check := flags.String("check", "", "exit 0 if `AGENT` is awake with a fresh heartbeat, else 1; print nothing")
	maxBacklogAge := flags.Duration("max-backlog-age", 0, "with --check: fail when the oldest unanswered message is older than this (0: no limit)")
	c := addCommon(flags, withRemote, withNATS, withRemoteAgent, withRoot, withKeyring)
	if err := parse(flags, args, getenv); err != nil {
		return err
	}
	names := slices.Clone(flags.Args())
	if flags.Changed("check") {
		if len(names) > 0 || *asJSON {
			return usageErrorf("who: --check takes one agent and no other arguments or --json")
		}
		names = []string{*check}
	} else if flags.Changed("max-backlog-age") {
		return usageErrorf("who: --max-backlog-age needs --check")
	}
	if *maxBacklogAge < 0 {
		return usageErrorf("who: --max-backlog-age must not be negative")
	}
	if staleAfter <= 0 {
		return usageErrorf("who: %s must be positive, not %v", envflag.Source(flags, "stale-after"), time.Duration(staleAfter))
	}
	return c.use(ctx, "", getenv, stderr, func(svc *openedService) error {
		rows, err := svc.Who(ctx, service.WhoRequest{Names: names, StaleAfter: time.Duration(staleAfter), Warn: warner(stderr)})
		if err != nil {
			return svc.fail("who", err)
		}
		now := time.Now()
		if flags.Changed("check") {
			return whoChecked(rows, time.Duration(staleAfter), now, *maxBacklogAge)
		}
		if *asJSON {
			return writeJSON(stdout, delivery.WhoEntries(rows, now))
		}
		if len(rows) == 0 {
			if svc.Remote() {
				fmt.Fprintln(stderr, "collab: no agents: the bridge knows none")
			} else {
				fmt.Fprintf(stderr, "collab: no agents: no heartbeats in %s and no registry\n", svc.root.Presence())
			}
		}
		return printTable(stdout, delivery.WhoTable(rows, now))
	})
}

// whoChecked is who --check's exit: 0 when the agent is alive and not stuck
// (delivery.Check), else 1 (saying why when it is stuck).
func whoChecked(rows []delivery.AgentRow, staleAfter time.Duration, now time.Time, limit time.Duration) error {
	alive, stuck := delivery.Check(rows, staleAfter, limit, now)
	switch {
	case !alive:
		return &exitError{code: exitFailure}
	case stuck != nil:
		return &exitError{code: exitFailure, msg: fmt.Sprintf("who: %s is awake but its oldest unanswered message is %s old (more than --max-backlog-age %s; backlog %d)",
			stuck.Agent, stuck.Oldest.Round(time.Second), limit, stuck.Backlog)}
	}
	return nil
}
