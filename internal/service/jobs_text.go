package service

import (
	"fmt"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
)

// JobsTable is js as collab jobs lists them: a header, then one row a
// job (a running job's time taken so far at now).
func JobsTable(js []jobs.Job, now time.Time) [][]string {
	rows := [][]string{{"JOB", "AGENT", "STATUS", "STARTED", "TOOK", "CLI", "COST", "FROM", "CHANNEL"}}
	for _, j := range js {
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
	return rows
}

// JobText is j as collab jobs show prints it: the run, then each event on
// one line (cut to 200 bytes), times local.
func JobText(j jobs.Job) string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s  agent %s@%s  %s  cli %s\n", j.ID, j.Agent, j.Host, j.Status, j.CLI)
	fmt.Fprintf(&b, "message %s from %s in %s\n", j.Message, j.From, j.Channel)
	if j.Session != "" {
		fmt.Fprintf(&b, "session %s (resumed: %v)\n", j.Session, j.Resumed)
	}
	if j.CostUSD > 0 || j.Usage.Input > 0 {
		fmt.Fprintf(&b, "cost $%.4f  tokens in %d out %d\n", j.CostUSD, j.Usage.Input, j.Usage.Output)
	}
	if j.Reply != "" {
		fmt.Fprintf(&b, "reply %s\n", j.Reply)
	}
	if j.Error != "" {
		fmt.Fprintf(&b, "error %s\n", j.Error)
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
		fmt.Fprintf(&b, "%s  %-11s %s\n", e.Time.Local().Format("15:04:05.000"), e.Kind, line)
	}
	return b.String()
}
