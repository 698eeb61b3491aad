package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/envflag"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/task"
	"github.com/spf13/pflag"
)

var taskUsage = helpText("task")

// runTask runs the task command args[0] names (taskSubs).
var runTask = subcommands("task", same(runTaskSub, slices.Collect(maps.Keys(taskSubs))...), nil)

func runTaskSub(ctx context.Context, sub string, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	c, err := parseTask(ctx, sub, args, getenv, stdin, stderr)
	if err != nil {
		return err
	}
	b, done, err := c.open(ctx, getenv, stderr)
	if err != nil {
		return err
	}
	defer done()
	return taskFailure(c.run(ctx, b, getenv, stdin, stdout, stderr))
}

// taskCmd is a task command as parsed.
type taskCmd struct {
	sub, ch, id        string
	by                 string // the acting agent's id ("" for list, show, context, worktree)
	title, body, text  string
	detail, detailFile string // --detail, --detail-file
	depends, status    []string
	ck                 task.Checkpoint
	maxTokens          int
	grace              time.Duration
	wt                 worktreeFlags
	asJSON, stdinUsed  bool
	*common            // --key only where an agent acts
}

// taskSubs are the task commands: whether each takes a task id, text
// after it, and makes events as its agent.
var taskSubs = map[string]struct{ id, text, acts bool }{
	"add": {acts: true}, "list": {}, "show": {id: true}, "claim": {id: true, acts: true}, "next": {acts: true},
	"checkpoint": {true, true, true}, "done": {true, true, true}, "fail": {true, true, true}, "retry": {true, true, true},
	"context": {id: true}, "worktree": {id: true},
}

// acts reports whether the command makes events as its agent.
func (c *taskCmd) acts() bool { return taskSubs[c.sub].acts }

// flags defines sub's flags on fs into c.
func (c *taskCmd) flags(fs *pflag.FlagSet) {
	switch c.sub {
	case "add":
		fs.StringVar(&c.title, "title", "", "the task's title (one line)")
		fs.StringVar(&c.body, "body", "", `what to do ("-" reads standard input)`)
		fs.StringSliceVar(&c.depends, "depends", nil, "ids of tasks that must be done first (repeat or comma-separate)")
	case "list":
		fs.StringSliceVar(&c.status, "status", nil, "only tasks in these states: pending, ready, blocked, claimed, done, failed")
	case "checkpoint", "done":
		fs.StringVar(&c.detail, "detail", "", "a structured detail: a JSON object")
		fs.StringVar(&c.detailFile, "detail-file", "", "a file holding the structured detail (a JSON object)")
	}
	switch c.sub {
	case "checkpoint":
		fs.StringVar(&c.text, "text", "", `the detail: what was done, decided or went wrong ("-" reads standard input)`)
		envflag.Alias(fs, "summary", "text")
		fs.StringVar(&c.ck.Type, "type", task.CkProgress, "the checkpoint's type: "+strings.Join(task.CheckpointTypes, ", "))
		fs.StringSliceVar(&c.ck.Files, "files", nil, "the files changed (repeat or comma-separate)")
	case "context":
		fs.IntVar(&c.maxTokens, "max-tokens", task.DefaultMaxTokens, "cut the context to about this many tokens (bytes/4)")
	case "done":
		fs.StringVar(&c.text, "outcome", "", `what came of it ("-" reads standard input)`)
		fs.BoolVar(&c.wt.remove, "remove-worktree", false, "remove the task's worktree (refused if it has uncommitted changes, unless --force)")
		fs.BoolVar(&c.wt.force, "force", false, "with --remove-worktree: remove it even with uncommitted changes")
	case "claim":
		fs.BoolVar(&c.wt.add, "worktree", false, "work on the task in a new git worktree and branch")
		fs.StringVar(&c.wt.repo, "repo", "", "with --worktree: the git repository (default: the working directory's)")
		fs.StringVar(&c.wt.base, "base", "", "with --worktree: the branch or commit to start from (default the repository's HEAD)")
	case "worktree":
		fs.BoolVar(&c.wt.force, "force", false, "rm: remove the worktree even with uncommitted changes")
	case "fail":
		fs.StringVar(&c.text, "error", "", `why it failed ("-" reads standard input)`)
	case "retry":
		fs.StringVar(&c.text, "note", "", `why it is retried ("-" reads standard input)`)
	}
}

// parseTask parses task sub's flags and arguments, and reads the texts
// given as "-" from stdin.
func parseTask(ctx context.Context, sub string, args []string, getenv env, stdin io.Reader, stderr io.Writer) (*taskCmd, error) {
	c := &taskCmd{sub: sub}
	fs := cmdFlags("task "+sub, taskUsage+"\nFlags:\n", stderr)
	c.common = &common{fs: fs}
	ch := needChannel(fs, "channel")
	if c.acts() { // --agent: the acting agent, or with --remote whose connection
		c.agent = agentFlag(fs, "", "acting agent ID", true)
	}
	asJSON := fs.Bool("json", false, "print JSON")
	grace := fs.Duration("grace", task.DefaultGrace, "release a claim whose agent shows no sign of life for this long")
	c.flags(fs)
	if c.acts() {
		c.add(withRoot, withKeyring, withKey, withRemote, withNATS)
	} else {
		c.add(withRoot, withKeyring, withRemote, withNATS, withRemoteAgent)
	}
	if err := parse(fs, args, getenv); err != nil {
		return nil, err
	}
	c.ch, c.asJSON, c.grace = *ch, *asJSON, *grace
	if c.acts() {
		if err := c.actingAgent(ctx); err != nil {
			return nil, err
		}
	}
	if c.grace <= 0 {
		return nil, usageErrorf("task %s: --grace must be positive", sub)
	}
	if err := c.words(fs.Args(), fs.Changed); err != nil {
		return nil, err
	}
	var err error
	if c.ck.Detail, err = service.ReadTaskDetail(c.detail, c.detailFile); err != nil {
		return nil, fmt.Errorf("%s: %w", c.cmd(), err)
	}
	return c, c.readTexts(stdin)
}

// actingAgent sets by: --agent (NAME or NAME@INSTANCE), else the login
// name; with --remote, the name of the bridge connection as given.
func (c *taskCmd) actingAgent(ctx context.Context) error {
	name, err := actorName(ctx, c.cmd(), c.remote(), *c.agent)
	if c.by = name; err != nil || c.remote() {
		return err
	}
	if c.by, err = service.AgentID(name); err != nil {
		return usageErrorf("%s: %v", c.cmd(), err)
	}
	return nil
}

// words reads the positional id and the trailing words: add's title, and
// the summary, outcome or error after the id.
func (c *taskCmd) words(words []string, changed func(string) bool) error {
	sub := c.sub
	wantID, wantText := taskSubs[sub].id, taskSubs[sub].text
	if sub == "worktree" && len(words) > 0 && words[0] == "rm" {
		c.wt.rm, words = true, words[1:]
	}
	switch {
	case wantID && len(words) == 0:
		return usageErrorf("task %s: give one task id", sub)
	case wantID && len(words) > 1 && (!wantText || c.text != ""):
		return usageErrorf("task %s: give one task id (unexpected %q)", sub, words[1])
	case sub == "add" && len(words) > 0 && c.title != "":
		return usageErrorf("task add: give the title as --title or as words, not both")
	case sub != "add" && !wantID && len(words) > 0:
		return usageErrorf("task %s: unexpected argument %q", sub, words[0])
	}
	if sub == "checkpoint" {
		if err := task.CheckType(c.ck.Type); err != nil {
			return usageErrorf("task checkpoint: --type: %v", err)
		}
	}
	if err := c.wt.check(sub, changed); err != nil {
		return err
	}
	if sub == "context" && c.maxTokens <= 0 {
		return usageErrorf("task context: --max-tokens must be positive")
	}
	if wantID {
		c.id, words = words[0], words[1:]
		if _, err := task.ParseID(c.id); err != nil {
			return usageErrorf("task %s: %v", sub, err)
		}
	}
	switch {
	case sub == "add" && len(words) > 0:
		c.title = strings.Join(words, " ")
	case wantText && len(words) > 0:
		c.text = strings.Join(words, " ")
	}
	for _, d := range c.depends {
		if _, err := task.ParseID(d); err != nil {
			return usageErrorf("task add: --depends: %v", err)
		}
	}
	return nil
}

// readTexts reads --body and the text from stdin where they are "-".
func (c *taskCmd) readTexts(stdin io.Reader) error {
	for _, p := range []*string{&c.body, &c.text} {
		if *p == "-" {
			c.stdinUsed = true
			s, err := readStdin(c.cmd(), stdin, task.MaxText, "task text")
			if err != nil {
				return err
			}
			*p = strings.TrimRight(s, "\n")
		}
	}
	return nil
}

// open chooses the board's service once: through a bridge with --remote
// (events signed there with the key; the reads need none), else on the
// mount, judging signatures with the keyring.
func (c *taskCmd) open(ctx context.Context, getenv env, stderr io.Writer) (taskBoard, func(), error) {
	b := taskBoard{q: service.TaskQuery{Channel: c.ch, Status: c.status, Grace: c.grace}, remote: c.remote()}
	sp := c.judged(getenv, stderr)
	sp.agent, sp.needKey = cmp.Or(c.by, sp.agent), c.acts() && c.sub != "add"
	var err error
	if c.remote() {
		if sp.agent, err = actingAgent(ctx, c.cmd(), "agent", sp.agent); err != nil {
			return b, nil, err
		}
		b.a.Name = sp.agent
	} else if b.a.Name = c.by; c.acts() {
		if b.a.Signer, err = signing.LoadAgentKey(sp.keyPath, c.by, getenv); err != nil {
			return b, nil, fmt.Errorf("%s: %w", c.cmd(), err)
		}
	}
	svc, err := openService(ctx, sp, getenv, stderr)
	if err != nil {
		return b, nil, err
	}
	b.svc = svc
	return b, svc.Close, nil
}

// run makes the command's one call (claim --worktree and done with a
// worktree: around it, this host's git) and prints its result.
func (c *taskCmd) run(ctx context.Context, b taskBoard, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	p := taskPrinter{w: stdout, json: c.asJSON}
	switch c.sub {
	case "add":
		t, err := b.svc.AddTask(ctx, b.a, b.q, service.NewTask{Title: c.title, Body: c.body, Depends: c.depends})
		if err != nil {
			return err
		}
		return show(stdout, p.json, t, t.ID+"\n")
	case "list":
		return c.list(ctx, b, p, stderr)
	case "show":
		s, err := b.svc.Task(ctx, b.q, c.id)
		if err != nil {
			return err
		}
		if s.More {
			fmt.Fprintln(stderr, "collab: older events left out of what a bridge reply holds; show on the mount for all")
		}
		return show(stdout, p.json, s.History(), s.Text(time.Local))
	case "context":
		tc, err := b.svc.TaskContext(ctx, b.q, c.id, c.maxTokens)
		if err != nil {
			return err
		}
		return show(stdout, p.json, tc, tc.Text())
	case "worktree":
		return taskWorktree(ctx, b, c.id, c.wt, p, stderr)
	case "claim", "next":
		if c.wt.add {
			return claimWorktree(ctx, b, c.id, c.wt, getenv, p)
		}
		return p.one(b.svc.ClaimTask(ctx, b.a, b.q, c.id))
	case "done":
		return c.done(ctx, b, p, stdin, stderr)
	}
	r := service.TaskReport{Kind: map[string]string{"checkpoint": task.EvCheckpoint, "fail": task.EvFailed, "retry": task.EvRetried}[c.sub],
		Text: c.text, Checkpoint: c.ck}
	t, err := b.svc.ReportTask(ctx, b.a, b.q, c.id, r)
	if err != nil {
		return err
	}
	return show(stdout, p.json, t, service.Reported(r, t)+"\n")
}

func (c *taskCmd) list(ctx context.Context, b taskBoard, p taskPrinter, stderr io.Writer) error {
	l, err := b.svc.Tasks(ctx, b.q)
	if err != nil {
		return err
	}
	for _, s := range l.Skipped {
		fmt.Fprintf(stderr, "collab: skipped %s\n", tree.Printable(s))
	}
	if l.More {
		fmt.Fprintln(stderr, "collab: the list is cut to what a bridge reply holds; list on the mount for all")
	}
	return p.list(l.Tasks)
}

// taskFailure gives a task not there and the board's refusals but a
// claim (waiting, finished, not the agent's) exit 1, as collab task
// documents; the rest exit by their kind (a claim another agent holds 4,
// no ready task 3).
func taskFailure(err error) error {
	for _, e := range []error{task.ErrNotFound, task.ErrNotReady, task.ErrClosed, task.ErrNotOwner, task.ErrNotFailed} {
		if errors.Is(err, e) {
			return &exitError{code: exitFailure, msg: err.Error()}
		}
	}
	return err
}

// taskPrinter prints tasks as text or JSON.
type taskPrinter struct {
	w    io.Writer
	json bool
}

// one prints t, the result of a call, unless the call failed (err).
func (p taskPrinter) one(t task.Task, err error) error {
	if err != nil {
		return err
	}
	return show(p.w, p.json, t, t.ID+" "+t.State(workflow.Address)+"\n")
}

func (p taskPrinter) list(tasks []task.Task) error {
	if p.json {
		return writeJSON(p.w, tasks) // [] when there are none: the layer's TaskQuery.keep
	}
	if len(tasks) == 0 {
		_, err := fmt.Fprintln(p.w, "no tasks")
		return err
	}
	return printTable(p.w, service.TasksTable(tasks, time.Now()))
}
