package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/task"
)

const taskUsage = `Usage: collab task COMMAND [flags]

The channel's task board: work items any agent on any host can claim.

  add [--title] T [--body B] [--depends ID…] add a task; prints its id
  list [--status S,…] [--json]               list tasks (S: pending, ready, claimed, done, failed)
  show ID [--json]                           a task and its events
  claim ID [--worktree [--repo DIR] [--base B]]
                                             claim a ready task (exit 4: claimed by another agent);
                                             --worktree: work on it in a git worktree of its own
  next                                       claim the first ready task (exit 3: none ready)
  checkpoint ID [--type T] [--files F,…] [--text] S
                                             record a checkpoint on your task (T: plan,
                                             progress (default), decision, error,
                                             recovery, complete; F: the files changed)
  done ID [--outcome] O [--remove-worktree [--force]]
                                             finish your task (and remove its worktree)
  fail ID [--error] E                        give up your task
  context ID [--max-tokens N] [--json]       what an agent needs to resume the task: it,
                                             its checkpoints, its dependencies' outcomes
  worktree ID [--json]                       the task's worktree: path, branch, uncommitted changes
  worktree rm ID [--force]                   remove the task's worktree (keeps the branch)

With --remote (or COLLAB_REMOTE=1), on a host without the mount, every
command goes through a bridge over NATS (--nats); events are signed here
with --key and verified by the bridge. Worktrees are this host's: claim
--worktree makes one in the repository here and records it on the task as
a signed event; worktree and done --remove-worktree read and remove it
here, and name the host when it is on another.

Every command takes --channel (env COLLAB_CHANNEL, then COLLAB_SESSION),
--root (env COLLAB_ROOT), and where an agent acts, --agent (env
COLLAB_AGENT, then the login name). --body, --text, --outcome and
--error read standard input when they are "-".
A claim whose agent shows no sign of life (no fresh presence heartbeat, no
event on the task) for --grace is released back to pending by the next
claim, next or list, and the release is recorded as an event.
An agent with a key (--key) signs its events. An event in the name of an
agent that has keys in the keyring (--keyring) but does not verify counts
for nothing (a forged claim is not that agent's claim); list and show mark
such events, and --json gives each event's "verdict".

claim --worktree adds a git worktree of the repository of --repo (default
the working directory) on a new branch from --base (default its HEAD),
named from the task id and title (t7-write-the-parser, -2… on a clash), in
$COLLAB_WORKTREES/REPO/BRANCH (default REPO/../.collab-worktrees), and
records the worktree and branch on the task as a signed event; claiming
again reuses it. done never removes a worktree silently: with
--remove-worktree it removes a clean one and refuses (exit 4, the task not
finished) one with uncommitted changes unless --force; without the flag
it asks when standard input is a terminal and otherwise keeps the
worktree and prints the command that removes it. The branch always stays.
`

func runTask(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) (rerr error) {
	if len(args) == 0 {
		fmt.Fprint(stderr, taskUsage)
		return &exitError{code: 2}
	}
	sub, args := args[0], args[1:]
	switch sub {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, taskUsage)
		return nil
	case "add", "list", "show", "claim", "next", "checkpoint", "done", "fail", "context", "worktree":
	default:
		return usageErrorf("task: unknown command %q; run 'collab task --help'", sub)
	}
	fs := newFlags("task "+sub, stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, taskUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	ch := channelFlag(fs, "channel")
	var agent *string
	if sub != "list" && sub != "show" && sub != "context" && sub != "worktree" {
		agent = agentFlag(fs, "", "acting agent ID", true)
	}
	asJSON := fs.Bool("json", false, "print JSON")
	grace := fs.Duration("grace", task.DefaultGrace, "release a claim whose agent shows no sign of life for this long")
	var title, body, text string
	var depends, status, files []string
	var ckType string
	var maxTokens int
	var wt worktreeFlags
	switch sub {
	case "add":
		fs.StringVar(&title, "title", "", "the task's title (one line)")
		fs.StringVar(&body, "body", "", `what to do ("-" reads standard input)`)
		fs.StringSliceVar(&depends, "depends", nil, "ids of tasks that must be done first (repeat or comma-separate)")
	case "list":
		fs.StringSliceVar(&status, "status", nil, "only tasks in these states: pending, ready, claimed, done, failed")
	case "checkpoint":
		fs.StringVar(&text, "text", "", `the detail: what was done, decided or went wrong ("-" reads standard input)`)
		alias(fs, "summary", "text")
		fs.StringVar(&ckType, "type", task.CkProgress, "the checkpoint's type: "+strings.Join(task.CheckpointTypes, ", "))
		fs.StringSliceVar(&files, "files", nil, "the files changed (repeat or comma-separate)")
	case "context":
		fs.IntVar(&maxTokens, "max-tokens", task.DefaultMaxTokens, "cut the context to about this many tokens (bytes/4)")
	case "done":
		fs.StringVar(&text, "outcome", "", `what came of it ("-" reads standard input)`)
		fs.BoolVar(&wt.remove, "remove-worktree", false, "remove the task's worktree (refused if it has uncommitted changes, unless --force)")
		fs.BoolVar(&wt.force, "force", false, "with --remove-worktree: remove it even with uncommitted changes")
	case "claim":
		fs.BoolVar(&wt.add, "worktree", false, "work on the task in a new git worktree and branch")
		fs.StringVar(&wt.repo, "repo", "", "with --worktree: the git repository (default: the working directory's)")
		fs.StringVar(&wt.base, "base", "", "with --worktree: the branch or commit to start from (default the repository's HEAD)")
	case "worktree":
		fs.BoolVar(&wt.force, "force", false, "rm: remove the worktree even with uncommitted changes")
	case "fail":
		fs.StringVar(&text, "error", "", `why it failed ("-" reads standard input)`)
	}
	rootf := rootFlag(fs)
	ringf := keyringFlag(fs)
	var keyf *string
	if agent != nil {
		keyf = keyFlag(fs)
	}
	rf := addRemoteFlags(fs)
	nf := addNATSFlags(fs)
	if agent == nil {
		agent = remoteAgentFlag(fs)
	}
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	cmd := "task " + sub
	if err := checkChannel(cmd, *ch); err != nil {
		return err
	}
	var by string
	if keyf != nil {
		var err error
		if by, err = actingAgent(ctx, cmd, "agent", *agent); err != nil {
			return err
		}
	}
	if *grace <= 0 {
		return usageErrorf("task %s: --grace must be positive", sub)
	}
	// The positional task id, where one is needed.
	var id string
	wantID := sub == "show" || sub == "claim" || sub == "checkpoint" || sub == "done" || sub == "fail" || sub == "context" || sub == "worktree"
	// Trailing words are the text, as in send: add's title, and the
	// summary, outcome or error after the id.
	words := fs.Args()
	if sub == "worktree" && len(words) > 0 && words[0] == "rm" {
		wt.rm, words = true, words[1:]
	}
	wantText := sub == "checkpoint" || sub == "done" || sub == "fail"
	switch {
	case wantID && len(words) == 0:
		return usageErrorf("task %s: give one task id", sub)
	case wantID && len(words) > 1 && (!wantText || text != ""):
		return usageErrorf("task %s: give one task id (unexpected %q)", sub, words[1])
	case sub == "add" && len(words) > 0 && title != "":
		return usageErrorf("task add: give the title as --title or as words, not both")
	case sub != "add" && !wantID && len(words) > 0:
		return usageErrorf("task %s: unexpected argument %q", sub, words[0])
	}
	if sub == "checkpoint" {
		if err := task.CheckType(ckType); err != nil {
			return usageErrorf("task checkpoint: --type: %v", err)
		}
	}
	if err := wt.check(sub, fs.Changed); err != nil {
		return err
	}
	if sub == "context" && maxTokens <= 0 {
		return usageErrorf("task context: --max-tokens must be positive")
	}
	if wantID {
		id, words = words[0], words[1:]
		if _, err := task.ParseID(id); err != nil {
			return usageErrorf("task %s: %v", sub, err)
		}
	}
	switch {
	case sub == "add" && len(words) > 0:
		title = strings.Join(words, " ")
	case wantText && len(words) > 0:
		text = strings.Join(words, " ")
	}
	stdinUsed := false
	for _, p := range []*string{&body, &text} {
		if *p == "-" {
			stdinUsed = true
			s, err := readStdin(cmd, stdin, task.MaxText, "task text")
			if err != nil {
				return err
			}
			*p = strings.TrimRight(s, "\n")
		}
	}
	if rf.on {
		a := taskArgs{sub: sub, ch: *ch, id: id, by: *agent, title: title, body: body, text: text, depends: depends, status: status,
			ck: task.Checkpoint{Type: ckType, Text: text, Files: files}, maxTokens: maxTokens, p: taskPrinter{w: stdout, json: *asJSON},
			wt: wt, tty: terminalFor(ctx, stdin, stdinUsed), stdin: stdin}
		if keyf != nil {
			a.by, a.keyPath = by, *keyf
		}
		return taskRemote(ctx, rf, nf, a, getenv, stderr)
	}
	root := tree.Resolve(*rootf, getenv)
	b, err := task.New(root, *ch)
	if err != nil {
		return err
	}
	b.Grace = *grace
	if keyf != nil {
		if b.Signer, err = loadSigner(*keyf, by, getenv); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
	}
	b.Verifier = verifierFor(root, openKeyring(root, *ringf), stderr)
	if keyf != nil && b.Signer == nil && b.Verifier.HasKeys(by) {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("%s: %s has keys in the keyring, so its unsigned events would count for nothing; pass --key (or COLLAB_KEY)", cmd, by)}
	}
	p := taskPrinter{w: stdout, json: *asJSON}

	switch sub {
	case "add":
		for _, d := range depends {
			if _, err := task.ParseID(d); err != nil {
				return usageErrorf("task add: --depends: %v", err)
			}
		}
		t, err := b.Add(task.NewTask{Title: title, Body: body, Depends: depends, By: by})
		if errors.Is(err, task.ErrInvalid) {
			return usageErrorf("%v", err)
		}
		if err != nil {
			return fmt.Errorf("task add: %w", err)
		}
		if p.json {
			return writeJSON(stdout, t)
		}
		_, err = fmt.Fprintln(stdout, t.ID)
		return err
	case "list":
		keep, err := statusFilter(status)
		if err != nil {
			return err
		}
		tasks, bad, err := b.List()
		if err != nil {
			return err
		}
		for _, e := range bad {
			fmt.Fprintf(stderr, "collab: skipped %s\n", tree.Printable(e.Error()))
		}
		return p.list(slices.DeleteFunc(tasks, func(t task.Task) bool { return !keep(t) }))
	case "show":
		t, evs, err := b.Events(id)
		if err != nil {
			return err
		}
		return p.show(t, evs)
	case "context":
		c, err := b.Context(id, maxTokens)
		if err != nil {
			return err
		}
		if p.json {
			return writeJSON(stdout, c)
		}
		_, err = io.WriteString(stdout, c.Text())
		return err
	case "worktree":
		return taskWorktree(ctx, mountBoard{b}, id, wt, p, stderr)
	case "next":
		t, err := b.Next(by)
		if errors.Is(err, task.ErrNoneReady) {
			return &exitError{code: exitNothing, msg: "no ready task in channel " + *ch}
		}
		if err != nil {
			return err
		}
		return p.one(t)
	}
	if sub == "claim" && wt.add {
		return claimWorktree(ctx, mountBoard{b}, id, by, wt, getenv, p)
	}
	var t task.Task
	switch sub {
	case "claim":
		t, err = b.Claim(id, by)
	case "checkpoint":
		t, err = b.Record(id, by, task.Checkpoint{Type: ckType, Text: text, Files: files})
		if errors.Is(err, task.ErrInvalid) {
			return usageErrorf("task checkpoint: %v", err)
		}
	case "done":
		if err := wt.beforeDone(ctx, mountBoard{b}, id, by); err != nil {
			return err
		}
		t, err = b.Finish(id, by, text)
		if err == nil {
			defer func() {
				rerr = cmp.Or(rerr, wt.afterDone(ctx, mountBoard{b}, t, terminalFor(ctx, stdin, stdinUsed), stdin, stderr))
			}()
		}
	case "fail":
		t, err = b.Fail(id, by, text)
	}
	var ce *task.ClaimedError
	if errors.As(err, &ce) {
		return &exitError{code: exitRefused, msg: err.Error()}
	}
	if err != nil {
		return err
	}
	return p.one(t)
}

// statusFilter returns a filter for --status.
func statusFilter(status []string) (func(task.Task) bool, error) {
	if len(status) == 0 {
		return func(task.Task) bool { return true }, nil
	}
	want := map[string]bool{}
	for _, s := range status {
		s = strings.ToLower(strings.TrimSpace(s))
		switch s {
		case task.Pending, task.Claimed, task.Done, task.Failed, "ready":
			want[s] = true
		default:
			return nil, usageErrorf("task list: --status %q is not one of pending, ready, claimed, done, failed", s)
		}
	}
	return func(t task.Task) bool { return want[t.Status] || want["ready"] && t.Ready }, nil
}

// taskPrinter prints tasks as text or JSON.
type taskPrinter struct {
	w    io.Writer
	json bool
}

func (p taskPrinter) one(t task.Task) error {
	if p.json {
		return writeJSON(p.w, t)
	}
	_, err := fmt.Fprintf(p.w, "%s %s\n", t.ID, stateText(t))
	return err
}

func (p taskPrinter) list(tasks []task.Task) error {
	if p.json {
		if tasks == nil {
			tasks = []task.Task{} // [] when there are none
		}
		return writeJSON(p.w, tasks)
	}
	if len(tasks) == 0 {
		_, err := fmt.Fprintln(p.w, "no tasks")
		return err
	}
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tAGE\tTITLE")
	now := time.Now()
	for _, t := range tasks {
		state := stateText(t)
		if t.Unverified > 0 {
			state += fmt.Sprintf(" [%d unverified]", t.Unverified)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.ID, state, shortAge(now.Sub(t.Updated)), oneLine(t.Title))
	}
	return tw.Flush()
}

func (p taskPrinter) show(t task.Task, evs []task.Event) error {
	if p.json {
		type event struct {
			task.Event
			Verdict signing.Verdict `json:"verdict"`
			Ignored bool            `json:"ignored,omitempty"` // left out of the state: see the package doc
		}
		history := make([]event, len(evs))
		for i, e := range evs {
			history[i] = event{e, e.Verdict, e.Ignored}
		}
		return writeJSON(p.w, struct {
			task.Task
			History []event `json:"history"`
		}{t, history})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s\n", t.ID, oneLine(t.Title))
	fmt.Fprintf(&b, "state:   %s\n", stateText(t))
	fmt.Fprintf(&b, "added:   %s by %s\n", t.Created.Local().Format(time.DateTime), t.CreatedBy)
	if len(t.Depends) > 0 {
		fmt.Fprintf(&b, "depends: %s\n", strings.Join(t.Depends, ", "))
	}
	if t.Worktree != "" {
		fmt.Fprintf(&b, "worktree: %s (branch %s, host %s)\n", oneLine(t.Worktree), oneLine(t.Branch), t.WorktreeHost)
	}
	if t.Body != "" {
		b.WriteString("\n")
		indent(&b, t.Body)
	}
	if len(evs) > 0 {
		b.WriteString("\nevents:\n")
	}
	for _, e := range evs {
		fmt.Fprintf(&b, "  %s  %-10s %s", e.Time.Local().Format(time.DateTime), e.Event, e.Agent)
		if e.Host != "" {
			fmt.Fprintf(&b, "@%s", e.Host)
		}
		if e.Type != "" {
			fmt.Fprintf(&b, " (%s)", e.Type)
		}
		if s := cmp.Or(e.Summary, e.Outcome, e.Error, e.Note); s != "" {
			fmt.Fprintf(&b, ": %s", oneLine(s))
		}
		if len(e.Files) > 0 {
			fmt.Fprintf(&b, " [files: %s]", oneLine(strings.Join(e.Files, ", ")))
		}
		switch {
		case e.Ignored:
			fmt.Fprintf(&b, "  [%s: ignored]", e.Verdict)
		case e.Verdict != signing.Verified && e.Verdict != signing.Unsigned:
			fmt.Fprintf(&b, "  [%s]", e.Verdict)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

// stateText is a task's state in words: "claimed by codex", "pending,
// waits for t1".
func stateText(t task.Task) string {
	switch {
	case t.Status == task.Claimed:
		return "claimed by " + t.Owner
	case t.Status == task.Pending && !t.Ready:
		return "pending, waits for " + strings.Join(t.Blockers, ", ")
	case t.Status == task.Pending:
		return "ready"
	}
	return t.Status
}

// oneLine shortens text to its first line, with control characters shown
// escaped.
func oneLine(s string) string {
	line, _, cut := strings.Cut(s, "\n")
	var b strings.Builder
	for _, r := range line {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	if cut {
		b.WriteString(" …")
	}
	return b.String()
}

func shortAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
