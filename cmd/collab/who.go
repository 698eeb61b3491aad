package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"collab/channel"
	"collab/internal/identity/signing"
	"collab/internal/plumbing/proc"
	"collab/internal/plumbing/tree"
	"collab/internal/workflow"
	"collab/internal/workspace/registry"
	"collab/presence"
)

// unknown is the state of an agent named on the command line that has
// neither a heartbeat nor a registry entry, or whose heartbeat cannot be read.
const unknown = "UNKNOWN"

func runWho(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	flags := newFlags("who", stderr)
	flags.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab who [AGENT…] [--json] [--stale-after D]
       collab who --check AGENT [--max-backlog-age D]

Show the presence of every agent, or of the named ones, sorted by name:
state, age of the last heartbeat, host, channels and, while it works, the
message it works on. Agents come from ROOT/signals/presence and from the
registry (ROOT/registry/agents). A presence or registry file that cannot be
read gets one warning on standard error and is otherwise skipped.

States:
  AWAKE/IDLE     the watcher runs and waits for messages
  AWAKE/WORKING  the watcher is answering MESSAGE
  STALE          AWAKE, but the heartbeat is older than --stale-after, or the
                 watcher's process is gone (checked only on its own host)
  AHEAD          AWAKE, but the heartbeat is dated more than a minute in the
                 future: the writer's clock is ahead, so its age says nothing
  OFFLINE        the watcher stopped cleanly, or the agent is registered but
                 has no heartbeat
  UNKNOWN        a named agent with neither a heartbeat nor a registry entry,
                 or one whose heartbeat file cannot be read

AGE is s, m, h or d; a negative AGE means the writer's clock is ahead.

When a heartbeat reports them, three more columns show what its watcher
holds: BACKLOG, the messages addressed to the agent not answered yet
(queued, and the one it works on); OLDEST, the age of the oldest of them;
REPLIED, how long ago the agent last answered. The backlog of an agent
that is not awake is not known ("-"): its watcher is gone.

A heartbeat that does not verify against the keyring (--keyring) is
marked in a SIGNATURE column: one with a bad signature or a key not
trusted for its agent, or an unsigned one of an agent that has keys.

With --check AGENT nothing is printed: the exit code is 0 if AGENT is
AWAKE/IDLE or AWAKE/WORKING and 1 otherwise, or when AGENT has keys but
its heartbeat does not verify (a forged heartbeat). With
--max-backlog-age D it also fails (and says why on standard error) when
the oldest message AGENT's watcher holds unanswered is older than D: a
stuck agent, not only a dead one.

With --remote (or COLLAB_REMOTE=1), on a host without the mount, the
agents are asked of a bridge over NATS (--nats), as --agent; --root is not
used, and --check is not available.

Flags:
`)
		flags.PrintDefaults()
	}
	asJSON := flags.Bool("json", false, "print a JSON array: agent, state, age_seconds, role, verdict, status (the heartbeat as written)")
	staleAfter := secondsOrDuration(presence.DefaultStaleAfter)
	flags.Var(&staleAfter, "stale-after", "show an AWAKE agent as STALE when its heartbeat is older than this (a duration, or seconds)")
	fromEnv(flags, "stale-after", "COLLAB_STALE_AFTER")
	check := flags.String("check", "", "exit 0 if `AGENT` is awake with a fresh heartbeat, else 1; print nothing")
	maxBacklogAge := flags.Duration("max-backlog-age", 0, "with --check: fail when the oldest unanswered message is older than this (0: no limit)")
	rf := addRemoteFlags(flags)
	nf := addNATSFlags(flags)
	ragent := remoteAgentFlag(flags)
	rootf := rootFlag(flags)
	ringf := keyringFlag(flags)
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
	for i, n := range names {
		if err := tree.CheckName("agent", n); err != nil && !strings.Contains(n, "@") {
			return usageErrorf("who: %v", err)
		}
		id, err := workflow.ParseAddress(n) // NAME@INSTANCE: a workflow agent
		if err != nil {
			return usageErrorf("who: %v", err)
		}
		names[i] = id
	}
	if staleAfter <= 0 {
		return usageErrorf("who: %s must be positive, not %v", source(flags, "stale-after"), time.Duration(staleAfter))
	}
	if rf.on {
		if flags.Changed("check") {
			return usageErrorf("who: --check does not work with --remote yet")
		}
		return whoRemote(ctx, rf, nf, *ragent, names, *asJSON, getenv, stdout, stderr)
	}
	root := tree.Resolve(*rootf, getenv)
	host := hostname() // no name: no PID is checked
	now := time.Now()
	v := verifierFor(root, openKeyring(root, *ringf), stderr)

	if flags.Changed("check") {
		s, err := presence.Read(root, *check)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "collab: warning: %s\n", tree.Printable(err.Error()))
		}
		if err == nil && presence.IsAwake(s.Effective(now, time.Duration(staleAfter), host, proc.PIDAlive)) &&
			v.Accepts(signing.Known, *check, s.Verify(v, *check)) {
			return checkBacklog(s, *check, now, *maxBacklogAge)
		}
		return &exitError{code: exitFailure}
	}

	rows, err := whoRows(root, names, now, time.Duration(staleAfter), host, stderr)
	if err != nil {
		return err
	}
	verifyRows(v, rows)
	if *asJSON {
		return whoJSON(stdout, rows, now)
	}
	if len(rows) == 0 {
		fmt.Fprintf(stderr, "collab: no agents: no heartbeats in %s and no registry\n", root.Presence())
	}
	return whoTable(stdout, rows, now)
}

// whoRow is one agent's line.
type whoRow struct {
	agent  string
	state  string
	status *presence.Status // nil: no readable heartbeat
	reg    *registry.Agent  // nil: not registered
	bad    bool             // its heartbeat file cannot be read
	age    time.Duration
	hasAge bool

	verdict signing.Verdict // of status, if any
	marked  bool            // the heartbeat does not verify and should
}

// verifyRows sets each row's verdict, checking the heartbeats in
// parallel. A row is marked when its heartbeat's signature fails, or the
// heartbeat is unsigned and its agent has keys.
func verifyRows(v *signing.Verifier, rows []whoRow) {
	var all []presence.Status
	var at []int
	for i, r := range rows {
		if r.status != nil {
			all = append(all, *r.status)
			at = append(at, i)
		}
	}
	for k, verdict := range presence.VerifyAll(v, all) {
		r := &rows[at[k]]
		r.verdict = verdict
		r.marked = verdict != signing.Verified && (verdict != signing.Unsigned || v.HasKeys(r.agent))
	}
}

// whoRows gathers the agents, all or the named ones, sorted by name.
// Unreadable files are warned about on stderr.
func whoRows(root tree.Root, names []string, now time.Time, staleAfter time.Duration, host string, stderr io.Writer) ([]whoRow, error) {
	rows := map[string]*whoRow{}
	row := func(agent string) *whoRow {
		r := rows[agent]
		if r == nil {
			r = &whoRow{agent: agent, state: unknown}
			rows[agent] = r
		}
		return r
	}
	if len(names) > 0 {
		names = slices.Compact(slices.Sorted(slices.Values(names)))
		for _, n := range names {
			row(n)
			s, err := presence.Read(root, n)
			switch {
			case err == nil:
				row(n).status = &s
			case !errors.Is(err, fs.ErrNotExist):
				fmt.Fprintf(stderr, "collab: warning: %s\n", tree.Printable(err.Error()))
				row(n).bad = true
			}
		}
	} else {
		all, skips, err := presence.ReadAll(root)
		if err != nil {
			return nil, err
		}
		for _, s := range skips {
			fmt.Fprintf(stderr, "collab: warning: skipped presence file %s\n", s)
			if a := s.Agent(); a != "" {
				row(a).bad = true
			}
		}
		for _, s := range all {
			row(s.AgentID).status = &s
		}
	}

	agents, skips, err := registry.List(root)
	if err != nil {
		fmt.Fprintf(stderr, "collab: warning: %s\n", tree.Printable(err.Error())) // the registry is optional
	}
	for _, s := range skips {
		if len(names) == 0 || slices.Contains(names, s.Agent()) {
			fmt.Fprintf(stderr, "collab: warning: skipped registry file %s\n", s)
		}
	}
	for _, a := range agents {
		if len(names) == 0 || slices.Contains(names, a.ID) {
			row(a.ID).reg = &a
		}
	}

	out := make([]whoRow, 0, len(rows))
	for _, r := range rows {
		switch {
		case r.status != nil:
			r.state = r.status.Effective(now, staleAfter, host, proc.PIDAlive)
			r.age, r.hasAge = r.status.Age(now)
		case r.reg != nil && !r.bad:
			r.state = presence.Offline
		}
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b whoRow) int { return strings.Compare(a.agent, b.agent) })
	return out, nil
}

func whoTable(w io.Writer, rows []whoRow, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	marks := slices.ContainsFunc(rows, func(r whoRow) bool { return r.marked })
	head := "AGENT\tSTATE\tAGE\tHOST\tCHANNEL\tMESSAGE"
	backlogs := slices.ContainsFunc(rows, func(r whoRow) bool {
		s := r.status
		return s != nil && (s.Backlog > 0 || s.OldestUnanswered != "" || s.LastReply != "")
	})
	if backlogs {
		head += "\tBACKLOG\tOLDEST\tREPLIED"
	}
	if marks {
		head += "\tSIGNATURE"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		age := "-"
		if r.hasAge {
			age = formatAge(r.age)
		}
		host, channels := r.where()
		var msg string
		if r.status != nil && r.state == presence.AwakeWorking {
			msg = r.status.MessageID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s", workflow.Display(r.agent), r.state, age, cell(host), cell(channels), cell(msg))
		if backlogs {
			b := r.backlog(now)
			n, oldest, replied := "-", "-", "-"
			if b.Backlog != nil {
				n = strconv.Itoa(*b.Backlog)
			}
			if b.OldestAge != nil {
				oldest = formatAge(time.Duration(*b.OldestAge) * time.Second)
			}
			if b.RepliedAge != nil {
				replied = formatAge(time.Duration(*b.RepliedAge) * time.Second)
			}
			fmt.Fprintf(tw, "\t%s\t%s\t%s", n, oldest, replied)
		}
		switch {
		case r.marked:
			fmt.Fprintf(tw, "\t%s\n", r.verdict)
		case marks:
			fmt.Fprint(tw, "\t-\n")
		default:
			fmt.Fprintln(tw)
		}
	}
	return tw.Flush()
}

// cell makes a value from a file safe for one table cell: control
// characters (tabs and newlines included) and spaces are escaped, and an
// empty value is "-".
func cell(s string) string {
	if s == "" {
		return "-"
	}
	var b strings.Builder
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			fmt.Fprintf(&b, "\\x%02x", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// formatAge formats an age in its largest whole unit: 4s, 3m, 2h, 5d.
func formatAge(d time.Duration) string {
	sign := ""
	if d < -time.Second {
		sign, d = "-", -d
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%s%ds", sign, max(d/time.Second, 0))
	case d < time.Hour:
		return fmt.Sprintf("%s%dm", sign, d/time.Minute)
	case d < 48*time.Hour:
		return fmt.Sprintf("%s%dh", sign, d/time.Hour)
	default:
		return fmt.Sprintf("%s%dd", sign, d/(24*time.Hour))
	}
}

// where returns the agent's host and channels: from its heartbeat, or for
// an agent without one, the host its registry entry names.
func (r whoRow) where() (host, channels string) {
	if s := r.status; s != nil {
		host, channels = s.Host, s.Channel
		if len(s.Channels) > 0 {
			channels = strings.Join(s.Channels, ",")
		}
	} else if r.reg != nil {
		host = r.reg.Host
	}
	return host, channels
}

// whoEntry is one element of --json's array.
type whoEntry struct {
	Agent      string           `json:"agent"`
	State      string           `json:"state"`
	AgeSeconds *int64           `json:"age_seconds"` // null: no heartbeat time
	Host       string           `json:"host,omitempty"`
	Channels   string           `json:"channels,omitempty"` // comma-separated
	Role       string           `json:"role,omitempty"`
	Verdict    string           `json:"verdict,omitempty"` // of status; absent without one
	Status     *presence.Status `json:"status"`            // null: no readable heartbeat
	whoBacklog
}

// whoBacklog is what an agent's watcher holds unanswered, and when the
// agent last answered, as its heartbeat says.
type whoBacklog struct {
	Backlog    *int   `json:"backlog,omitempty"`                   // only while awake
	OldestAge  *int64 `json:"oldest_unanswered_seconds,omitempty"` // only while awake
	RepliedAge *int64 `json:"last_reply_seconds,omitempty"`
}

// backlog reads r's heartbeat's backlog fields; those of an agent that
// is not awake are unknown (nil), its watcher being gone.
func (r whoRow) backlog(now time.Time) whoBacklog {
	var b whoBacklog
	s := r.status
	if s == nil {
		return b
	}
	if n, err := channel.ParseID(s.LastReply); err == nil {
		secs := int64(now.Sub(n.Time) / time.Second)
		b.RepliedAge = &secs
	}
	if !presence.IsAwake(r.state) {
		return b
	}
	n := s.Backlog
	b.Backlog = &n
	if t, ok := oldestUnanswered(*s); ok {
		secs := int64(now.Sub(t) / time.Second)
		b.OldestAge = &secs
	}
	return b
}

// oldestUnanswered parses a heartbeat's oldest_unanswered.
func oldestUnanswered(s presence.Status) (time.Time, bool) {
	if s.Backlog == 0 || s.OldestUnanswered == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s.OldestUnanswered)
	return t, err == nil
}

// checkBacklog fails who --check when agent's oldest unanswered message
// is older than limit (0: no limit).
func checkBacklog(s presence.Status, agent string, now time.Time, limit time.Duration) error {
	t, ok := oldestUnanswered(s)
	if limit <= 0 || !ok || now.Sub(t) <= limit {
		return nil
	}
	return &exitError{code: exitFailure, msg: fmt.Sprintf("who: %s is awake but its oldest unanswered message is %s old (more than --max-backlog-age %s; backlog %d)",
		agent, now.Sub(t).Round(time.Second), limit, s.Backlog)}
}

func whoJSON(w io.Writer, rows []whoRow, now time.Time) error {
	out := make([]whoEntry, len(rows))
	for i, r := range rows {
		out[i] = whoEntry{Agent: r.agent, State: r.state, Status: r.status, whoBacklog: r.backlog(now)}
		out[i].Host, out[i].Channels = r.where()
		if r.hasAge {
			secs := int64(r.age / time.Second)
			out[i].AgeSeconds = &secs
		}
		if r.reg != nil {
			out[i].Role = r.reg.Role
		}
		if r.status != nil {
			out[i].Verdict = r.verdict.String()
		}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
