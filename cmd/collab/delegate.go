package main

// collab delegate: hand work to a new agent in its own git worktree on
// its own branch and channel, and follow it. The operations are the
// service layer's (service.Delegations); this file parses, calls and
// prints.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/envflag"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/delegate"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/watcher"
)

// Variables a watcher sets for its CLI so that a delegation made from
// inside a model run carries the delegator's limits over (collab delegate
// reads them; its flags win).
const (
	envMaxHops      = runenv.MaxHops
	envBudgetUSD    = runenv.BudgetUSD
	envBudgetTokens = runenv.BudgetTokens
	envWorktrees    = service.EnvWorktrees
)

var runDelegate = subcommands("delegate", map[string]subFunc{"ls": runDelegateLs, "status": runDelegateStatus, "send": runDelegateSend,
	"stop": runDelegateStop, "rm": runDelegateStop}, runDelegateNew)

func runDelegateNew(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	o, err := parseDelegate(args, getenv, stdin, stderr)
	if err != nil {
		return err
	}
	from, err := actingAgent(ctx, "delegate", "delegator", o.agent)
	if err != nil {
		return err
	}
	signer, err := signing.LoadAgentKey(o.key, from, getenv)
	if err != nil {
		return fmt.Errorf("delegate: %w", err)
	}
	svc := mount(o.root, stderr)
	res, err := svc.Delegate(ctx, service.Actor{Name: from, Signer: signer, Hops: runenv.RunHops(getenv)}, o.req)
	if err != nil {
		return fmt.Errorf("delegate: %w", err)
	}
	s, m := res.Session, res.Prompt
	line := fmt.Sprintf("session %s: agent %s, branch %s, worktree %s, channel %s", s.ID, s.Agent, s.Branch, s.Worktree, s.Channel)
	switch {
	case o.asJSON && !o.wait:
		return writeJSON(stdout, res.View())
	case o.asJSON:
		fmt.Fprintf(stderr, "collab: %s\n", line)
	default:
		fmt.Fprintf(stderr, "collab: %s signs with a key of its own (%s); until the admin who ran 'collab init' trusts it, nothing it signs verifies:\n  %s\n",
			s.Agent, s.Key, res.Trust)
		fmt.Fprintf(stdout, "%s (prompt %s)\n", line, m.ID)
	}
	if !o.wait {
		return nil // the agent is started; follow it with delegate status, send --wait, wait
	}
	fmt.Fprintf(stderr, "collab: sent %s; waiting for the answer\n", m.ID)
	rw := replyWait{root: o.root, channel: s.Channel, id: m.ID, timeout: o.timeout,
		opt: delegate.Options{NotFrom: from, Poll: time.Second}, json: o.asJSON, track: true,
		await: func(ctx context.Context, opt delegate.Options) (channel.Message, error) {
			return svc.WaitReply(ctx, s.Channel, m.ID, opt)
		},
		answer: func(reply json.RawMessage) any { v := res.View(); v.Answer = reply; return v }}
	return rw.run(ctx, getenv, stdout, stderr)
}

// delegateOptions are collab delegate's flags.
type delegateOptions struct {
	req          service.DelegateRequest
	root         tree.Root
	agent, key   string
	wait, asJSON bool
	timeout      time.Duration
}

// parseDelegate parses collab delegate's flags and prompt.
func parseDelegate(args []string, getenv env, stdin io.Reader, stderr io.Writer) (*delegateOptions, error) {
	fs := cmdFlags("delegate", helpText("delegate"), stderr)
	o := &delegateOptions{}
	r := &o.req
	agent := agentFlag(fs, "", "the delegator's agent ID", true)
	fs.StringVar(&r.Repo, "repo", ".", "a folder of the git repository to work on")
	fs.StringVar(&r.Base, "base", "", "the branch (or commit) the new branch starts from (default: the repository's current branch)")
	fs.StringVar(&r.Branch, "branch", "", "the new branch's name (default: made from --title or the prompt)")
	fs.StringVar(&r.CLI, "cli", "claude", "the delegated agent's CLI adapter: claude, codex, gemini or command")
	envflag.FromEnv(fs, "cli", service.EnvDelegateCLI)
	fs.StringVar(&r.Cmd, "cmd", "", "command line of its CLI (as collab watch --cmd)")
	fs.StringVar(&r.Model, "model", "", "model for its CLI")
	fs.StringVar(&r.Title, "title", "", "the session's title")
	fs.BoolVar(&o.wait, "wait", false, "wait for the first answer and print it (exit 3 on timeout, 4 when refused)")
	fs.DurationVar(&o.timeout, "timeout", defaultWaitTimeout, "with --wait: give up after this long (0: wait until interrupted)")
	fs.BoolVar(&o.asJSON, "json", false, "print the session as JSON (with --wait: and the answer)")
	fs.StringVar(&r.Worktrees, "worktrees", "", "the folder worktrees go under (default REPO/../.collab-worktrees; "+envWorktrees+")")
	envflag.FromEnv(fs, "worktrees", envWorktrees)
	maxDepth := fs.Int("max-depth", sessions.DefaultMaxDepth, "refuse when the delegator's own delegation depth is this (0: no limit)")
	maxConc := fs.Int("max-concurrent", sessions.DefaultMaxConcurrent, "refuse when the delegator has this many active sessions (0: no limit)")
	fs.IntVar(&r.MaxHops, "max-hops", 0, "the delegated watcher's --max-hops (default: the delegator's, "+envMaxHops+")")
	envflag.FromEnv(fs, "max-hops", envMaxHops)
	fs.Float64Var(&r.BudgetUSD, "budget-usd", 0, "the delegated watcher's --budget-usd (default: the delegator's, "+envBudgetUSD+")")
	envflag.FromEnv(fs, "budget-usd", envBudgetUSD)
	fs.Int64Var(&r.BudgetTokens, "budget-tokens", 0, "the delegated watcher's --budget-tokens (default: the delegator's, "+envBudgetTokens+")")
	envflag.FromEnv(fs, "budget-tokens", envBudgetTokens)
	fs.DurationVar(&r.Poll, "poll", watcher.DefaultPoll, "the delegated watcher's poll interval")
	fs.DurationVar(&r.Heartbeat, "heartbeat", watcher.DefaultHeartbeat, "the delegated watcher's heartbeat interval")
	fs.DurationVar(&r.StartTimeout, "start-timeout", time.Minute, "how long to wait for the delegated agent to be AWAKE")
	c := addCommon(fs, withKey, withRoot)
	if err := parse(fs, args, getenv); err != nil {
		return nil, err
	}
	prompt, err := messageText(false, "", fs.Args(), stdin)
	if err != nil {
		return nil, usageErrorf("delegate: %v", strings.TrimPrefix(err.Error(), "send: "))
	}
	if fs.Changed("timeout") && !o.wait {
		return nil, usageErrorf("delegate: --timeout needs --wait")
	}
	r.Prompt, r.AwaitReply = prompt, o.wait
	r.MaxDepth, r.MaxConcurrent = noLimit(*maxDepth), noLimit(*maxConc)
	def := service.DelegateDefaultsFrom(getenv)
	r.Depth, r.KeyDir = def.Depth, def.KeyDir
	o.root, o.agent, o.key = c.tree(getenv), *agent, c.keyPath()
	return o, nil
}

// noLimit is a limit flag as the service takes it: the flag's 0 (no
// limit) is negative there.
func noLimit(v int) int {
	if v == 0 {
		return -1
	}
	return v
}

func runDelegateLs(ctx context.Context, _ string, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("delegate ls", stderr)
	asJSON := fs.Bool("json", false, "print the sessions as JSON")
	all := fs.Bool("all", false, "also removed sessions")
	c := addCommon(fs, withRoot)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	rows, err := c.mount(getenv, stderr).Sessions(ctx, service.SessionsQuery{All: *all})
	if err != nil {
		return fmt.Errorf("delegate ls: %w", err)
	}
	if *asJSON {
		return writeJSON(stdout, rows)
	}
	t := [][]string{{"ID", "AGENT", "STATE", "STATUS", "BY", "BRANCH", "WORKTREE"}}
	for _, r := range rows {
		t = append(t, []string{r.ID, r.Agent, r.State, r.Status, r.DelegatedBy, tree.Printable(r.Branch), tree.Printable(r.Worktree)})
	}
	return printTable(stdout, t)
}

func runDelegateStatus(ctx context.Context, _ string, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("delegate status", stderr)
	asJSON := fs.Bool("json", false, "print the status as JSON")
	c := addCommon(fs, withRoot)
	if err := parseOne(fs, args, getenv, "want one session ID"); err != nil {
		return err
	}
	out, err := c.mount(getenv, stderr).SessionStatus(ctx, service.SessionRef{ID: fs.Arg(0)})
	if err != nil {
		return fmt.Errorf("delegate status: %w", err)
	}
	return show(stdout, *asJSON, out, out.Text())
}

// runDelegateSend is collab send to the session's agent in its channel:
// delegate send ID [send's flags] TEXT….
func runDelegateSend(ctx context.Context, _ string, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return runSend(ctx, args, getenv, stdin, stdout, stderr)
		}
		return usageErrorf("delegate send: want the session ID first, then the text (and collab send's flags)")
	}
	id, rest := args[0], args[1:]
	rootf := ""
	for i, a := range rest {
		if a == "--root" && i+1 < len(rest) {
			rootf = rest[i+1]
		} else if v, ok := strings.CutPrefix(a, "--root="); ok {
			rootf = v
		}
	}
	s, err := mount(tree.Resolve(rootf, getenv), stderr).FindSession(ctx, service.SessionRef{ID: id})
	if err != nil {
		return fmt.Errorf("delegate send: %w", err)
	}
	return runSend(ctx, append([]string{"--channel", s.Channel, "--to", s.Agent}, rest...), getenv, stdin, stdout, stderr)
}

// runDelegateStop is delegate stop, and delegate rm.
func runDelegateStop(ctx context.Context, sub string, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	cmd := "delegate " + sub
	fs := newFlags(cmd, stderr)
	force := fs.Bool("force", false, "rm: remove the worktree even with uncommitted changes")
	grace := fs.Duration("timeout", service.DefaultStopGrace, "how long the watcher may take to stop before it is killed")
	c := addCommon(fs, withRoot)
	if err := parseOne(fs, args, getenv, "want one session ID"); err != nil {
		return err
	}
	if sub == "stop" && *force {
		return usageErrorf("%s: --force is rm's", cmd)
	}
	svc, ref := c.mount(getenv, stderr), service.SessionRef{ID: fs.Arg(0)}
	if sub == "stop" {
		s, err := svc.StopSession(ctx, service.StopSessionRequest{Session: ref, Grace: *grace})
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		fmt.Fprintf(stdout, "session %s: %s stopped; its worktree %s stays\n", s.ID, s.Agent, s.Worktree)
		return nil
	}
	rm, err := svc.RemoveSession(ctx, service.RemoveSessionRequest{Session: ref, Grace: *grace, Force: *force})
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	s := rm.Session
	if rm.KeyError != "" {
		fmt.Fprintf(stderr, "collab: warning: %s's key: %s\n", s.Agent, rm.KeyError)
	}
	fmt.Fprintf(stdout, "session %s: %s stopped, worktree %s and its key removed; branch %s kept\n", s.ID, s.Agent, s.Worktree, s.Branch)
	return nil
}
