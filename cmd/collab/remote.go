package main

// The wiring of --remote (COLLAB_REMOTE=1): send, read, who and status on
// a host without the mount, through a bridge (internal/transport/remote),
// and collab outbox.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/internal/transport/remote"
	"github.com/collabdev/collab/internal/workspace/delegate"
	"github.com/collabdev/collab/internal/workspace/registry"
	"github.com/collabdev/collab/presence"
)

const envRemote = "COLLAB_REMOTE"

// remoteFlags are --remote and --state-dir.
type remoteFlags struct {
	on    bool
	state string
}

func addRemoteFlags(fs *pflag.FlagSet) *remoteFlags {
	f := &remoteFlags{}
	fs.BoolVar(&f.on, "remote", false, "no mount: go through a bridge over NATS (--nats); --root is not used")
	fromEnv(fs, "remote", envRemote)
	fs.StringVar(&f.state, "state-dir", "", "with --remote: this host's state for the agent, its outbox (default $XDG_STATE_HOME/collab/remote/AGENT)")
	fromEnv(fs, "state-dir", "COLLAB_STATE_DIR")
	return f
}

// remoteOn reports whether fs has --remote set (by flag or variable).
func remoteOn(fs *pflag.FlagSet) bool {
	f := fs.Lookup("remote")
	return f != nil && f.Value.String() == "true"
}

// remoteAgentFlag adds --agent to a command that has none of its own
// (read, who, status): with --remote it names whose subjects and state
// are used.
func remoteAgentFlag(fs *pflag.FlagSet) *string {
	return agentFlag(fs, "", "with --remote: the agent whose NATS subjects and local state are used", true)
}

// remoteClient connects as agent, signing with the agent's key (needKey:
// refuse without one), and first resends what the agent's outbox holds,
// reporting it on stderr. A NATS server that cannot be reached is not an
// error: the client queues its writes and its reads fail.
func remoteClient(ctx context.Context, cmd string, rf *remoteFlags, nf *natsFlags, agent, keyPath string, needKey bool, getenv env, stderr io.Writer) (*remote.Client, error) {
	signer, err := loadSigner(keyPath, agent, getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	if signer == nil && needKey {
		return nil, fmt.Errorf("%s: %w", cmd, remote.ErrNoKey)
	}
	logger := commandLogger(stderr)
	o, ok := nf.options(getenv, natsbus.ConnName(agent, hostname()), logger)
	if !ok {
		return nil, usageErrorf("%s --remote: no NATS server: use --nats URL or set NATS_URL", cmd)
	}
	state := rf.state
	if state == "" {
		state = remote.DefaultStateDir(agent, getenv)
	}
	c, err := remote.Dial(ctx, o, remote.Config{Agent: agent, Signer: signer, StateDir: state, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	reportFlush(c.Flush(ctx), c.OutboxPath(), stderr)
	return c, nil
}

// reportFlush says on stderr what a flush did, when it did anything.
func reportFlush(res remote.FlushResult, path string, stderr io.Writer) {
	if n := len(res.Sent); n > 0 {
		fmt.Fprintf(stderr, "collab: sent %d queued write(s) from the outbox %s\n", n, path)
	}
	for _, err := range res.Refused {
		fmt.Fprintf(stderr, "collab: warning: %v\n", err)
	}
	if res.Err != nil && !errors.Is(res.Err, remote.ErrQueued) {
		fmt.Fprintf(stderr, "collab: warning: outbox: %v\n", res.Err)
	}
}

// queuedError is the error of a write kept in the outbox: exit 5.
func queuedError(cmd string, err error, path string) error {
	var qe *remote.QueuedError
	if errors.As(err, &qe) {
		err = qe.Err
	}
	return &exitError{code: exitQueued, msg: fmt.Sprintf("%s: %v; the message is kept in the outbox %s and is sent by the next remote command or `collab outbox flush --remote`", cmd, err, path)}
}

// sendRemote posts m through the bridge: send --remote.
// With w, it then waits for the reply as send --wait does.
func sendRemote(ctx context.Context, rf *remoteFlags, nf *natsFlags, keyPath string, m *channel.Message, replyTo string, w *remoteWait, asJSON bool, getenv env, stdout, stderr io.Writer) error {
	if replyTo != "" {
		// The parent is on the mount: thread on its id.
		m.SetParent(&channel.Message{ID: replyTo})
	}
	c, err := remoteClient(ctx, "send", rf, nf, m.From, keyPath, true, getenv, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	start := time.Now() // before the post: the wait follows the stream from here
	_, err = c.Post(ctx, m)
	switch {
	case errors.Is(err, remote.ErrQueued):
		return queuedError("send", err, c.OutboxPath())
	case errors.Is(err, channel.ErrTooLarge):
		return usageErrorf("send: %v", err)
	case err != nil:
		return fmt.Errorf("send: %w", err)
	}
	if w == nil {
		return printSent(stdout, m, asJSON)
	}
	// As send --wait on the mount: the reply from the stream (the bridge
	// publishes every file that lands), the delivery status from the
	// bridge's status op.
	fmt.Fprintf(stderr, "collab: sent %s; waiting for the reply\n", m.ID)
	rw := replyWait{channel: m.SessionID, id: m.ID, timeout: w.timeout, json: asJSON, track: true,
		opt: delegate.Options{NotFrom: m.From, Poll: w.poll, Trust: w.trust, Verifier: w.verifier},
		await: func(ctx context.Context, opt delegate.Options) (channel.Message, error) {
			return c.AwaitReply(ctx, m.SessionID, start, func(r *channel.Message) bool { return opt.IsReply(r, m.ID) })
		},
		status: func(ctx context.Context) (delivery.Status, error) { return c.Status(ctx, m.ID) },
	}
	return rw.run(ctx, nf, getenv, stdout, stderr)
}

// remoteWait is send --wait's settings for send --remote.
type remoteWait struct {
	timeout, poll time.Duration
	trust         signing.Policy    // send --trust
	verifier      *signing.Verifier // of send --keyring
}

// readRemote is read --remote: a page of the newest messages, or every
// message after --since ID (at most --limit), then with follow the new
// ones from the stream.
func readRemote(ctx context.Context, rf *remoteFlags, nf *natsFlags, agent, ch, since string, limit int, follow bool, p printer, getenv env, stderr io.Writer) error {
	if since != "" {
		if _, err := channel.ParseID(since); err != nil {
			return usageErrorf("read: with --remote, --since takes a message id, not %q", since)
		}
	}
	agent, err := actingAgent(ctx, "read", "agent", agent)
	if err != nil {
		return err
	}
	c, err := remoteClient(ctx, "read", rf, nf, agent, "", false, getenv, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	var seen []string
	last := since
	for printed := 0; ; {
		n := limit
		if since != "" && limit > 0 {
			n = min(limit-printed, bridge.MaxReadLimit)
		}
		page, err := c.Read(ctx, ch, last, n)
		if err != nil {
			return err
		}
		for _, o := range page.Omitted {
			fmt.Fprintf(stderr, "collab: message %s not shown: %s; read it on the mount\n", tree.Printable(o.ID), tree.Printable(o.Omitted))
		}
		if err := p.messages(page.Messages); err != nil {
			return err
		}
		for _, m := range page.Messages {
			seen = append(seen, m.ID)
		}
		printed += len(page.Messages) + len(page.Omitted)
		if page.Last != "" {
			last = page.Last
		}
		// The newest page is one page; after an id, page on to the end.
		if since == "" || !page.More || page.Last == "" || limit > 0 && printed >= limit {
			break
		}
	}
	if !follow {
		return nil
	}
	start := time.Now()
	if n, err := channel.ParseID(last); err == nil {
		start = n.Time
	}
	return c.Follow(ctx, ch, start, seen, func(m channel.Message) error {
		return p.messages([]channel.Message{m})
	})
}

// whoRemote is who --remote: the bridge's who --json, all agents or the
// named ones, as JSON or as who's table.
// With check, it prints nothing and its exit code is who --check's.
func whoRemote(ctx context.Context, rf *remoteFlags, nf *natsFlags, agent string, names []string, check *whoCheck, asJSON bool, getenv env, stdout, stderr io.Writer) error {
	agent, err := actingAgent(ctx, "who", "agent", agent)
	if err != nil {
		return err
	}
	c, err := remoteClient(ctx, "who", rf, nf, agent, "", false, getenv, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	entries, err := c.Who(ctx)
	if err != nil {
		return err
	}
	if check != nil {
		for _, e := range entries {
			fresh := e.AgeSeconds != nil && time.Duration(*e.AgeSeconds)*time.Second <= check.staleAfter
			bad := e.Forged || e.Verdict != "" && e.Verdict != signing.Verified.String() && e.Verdict != signing.Unsigned.String()
			if e.Agent == check.agent && e.Status != nil && presence.IsAwake(e.State) && fresh && !bad {
				return checkBacklog(*e.Status, e.Agent, time.Now(), check.maxBacklogAge)
			}
		}
		return &exitError{code: exitFailure}
	}
	if len(names) > 0 {
		entries = slices.DeleteFunc(entries, func(e delivery.WhoEntry) bool { return !slices.Contains(names, e.Agent) })
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(entries)
	}
	if len(entries) == 0 {
		fmt.Fprintln(stderr, "collab: no agents: the bridge knows none")
	}
	now := time.Now()
	rows := make([]delivery.AgentRow, len(entries))
	for i, e := range entries {
		rows[i] = delivery.AgentRow{Agent: e.Agent, State: e.State, Status: e.Status}
		if e.AgeSeconds != nil {
			rows[i].Age, rows[i].HasAge = time.Duration(*e.AgeSeconds)*time.Second, true
		}
		if e.Status == nil && e.Host != "" {
			rows[i].Reg = &registry.Agent{ID: e.Agent, Host: e.Host, Role: e.Role}
		}
		// The bridge's verdict, and whether it marked the heartbeat.
		if v, ok := signing.ParseVerdict(e.Verdict); ok && e.Verdict != "" {
			rows[i].Verdict = v
			rows[i].Marked = e.Forged || v != signing.Verified && v != signing.Unsigned
		}
	}
	return whoTable(stdout, rows, now)
}

// whoCheck is who --check's agent and --max-backlog-age.
type whoCheck struct {
	agent         string
	staleAfter    time.Duration // --stale-after: the bridge judges by the default
	maxBacklogAge time.Duration
}

// statusRemote is status --remote: the bridge's status --json.
func statusRemote(ctx context.Context, rf *remoteFlags, nf *natsFlags, agent, id string, asJSON bool, getenv env, stdout, stderr io.Writer) error {
	agent, err := actingAgent(ctx, "status", "agent", agent)
	if err != nil {
		return err
	}
	c, err := remoteClient(ctx, "status", rf, nf, agent, "", false, getenv, stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := c.Status(ctx, id)
	var be *bridge.Error
	if errors.As(err, &be) && be.Code == bridge.CodeNotFound {
		return &exitError{code: exitNothing, msg: fmt.Sprintf("status: %v", err)}
	}
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	return statusText(stdout, st, time.Now())
}

func runOutbox(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("outbox", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab outbox [ls|flush] --agent A [--remote] [--json]

The outbox of a host without the mount: the writes of 'collab send
--remote' that the bridge has not acknowledged yet, kept in
STATE/outbox/ (--state-dir), and those it refused, moved to
STATE/outbox/failed/ with the reason. Every remote command first resends
the outbox, oldest first, for at most 10 seconds.

  ls      list the waiting and the refused writes (the default)
  flush   resend the waiting writes now through the bridge (--nats); exit 5
          when some are still waiting because it cannot be reached

Flags:
`)
		fs.PrintDefaults()
	}
	agent := agentFlag(fs, "", "the agent whose outbox it is", true)
	asJSON := fs.Bool("json", false, "ls: print the entries as JSON")
	rf := addRemoteFlags(fs)
	nf := addNATSFlags(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	sub := "ls"
	if fs.NArg() > 0 {
		sub = fs.Arg(0)
	}
	if fs.NArg() > 1 || sub != "ls" && sub != "flush" {
		return usageErrorf("outbox: use 'collab outbox ls' or 'collab outbox flush'")
	}
	who, err := actingAgent(ctx, "outbox", "agent", *agent)
	if err != nil {
		return err
	}
	state := rf.state
	if state == "" {
		state = remote.DefaultStateDir(who, getenv)
	}
	if state == "" {
		return usageErrorf("outbox: no state directory: use --state-dir or set HOME")
	}
	if sub == "flush" {
		// remoteClient resends the outbox and reports it.
		c, err := remoteClient(ctx, "outbox flush", rf, nf, who, "", false, getenv, stderr)
		if err != nil {
			return err
		}
		defer c.Close()
		left, err := c.Outbox()
		if err != nil {
			return err
		}
		if len(left) > 0 {
			return &exitError{code: exitQueued, msg: fmt.Sprintf("outbox flush: %d write(s) still waiting in %s: the bridge cannot be reached", len(left), c.OutboxPath())}
		}
		fmt.Fprintln(stdout, "outbox empty")
		return nil
	}
	waiting, err := remote.Pending(state)
	if err != nil {
		return err
	}
	failed, err := remote.Refused(state)
	if err != nil {
		return err
	}
	if *asJSON {
		type entry struct {
			remote.Entry
			File string `json:"file"`
		}
		out := map[string][]entry{"waiting": {}, "failed": {}}
		for _, e := range waiting {
			out["waiting"] = append(out["waiting"], entry{e, e.Name})
		}
		for _, e := range failed {
			out["failed"] = append(out["failed"], entry{e, e.Name})
		}
		return writeJSON(stdout, out)
	}
	for _, l := range []struct {
		what    string
		entries []remote.Entry
	}{{"waiting", waiting}, {"failed", failed}} {
		for _, e := range l.entries {
			line := fmt.Sprintf("%s  %s  %s  %s", l.what, cell(e.Op), tree.Printable(e.Describe()), presence.FormatTime(e.Queued))
			if e.Refused != "" {
				line += "  " + tree.Printable(e.Refused)
			}
			fmt.Fprintln(stdout, line)
		}
	}
	if len(waiting)+len(failed) == 0 {
		fmt.Fprintf(stderr, "collab: the outbox %s is empty\n", filepath.Join(state, remote.OutboxDir))
	}
	return nil
}
