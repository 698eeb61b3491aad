package main

// collab delegate: hand work to a new agent in its own git worktree
// (package worktree) on its own branch and channel, and follow it; the
// session records are package sessions'. collab resume restarts the
// delegated agents of this host whose watcher is gone.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/delegate"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/internal/workspace/worktree"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// Variables a watcher sets for its CLI so that a delegation made from
// inside a model run carries the delegator's limits over (collab delegate
// reads them; its flags win).
const (
	envMaxHops      = "COLLAB_MAX_HOPS"
	envBudgetUSD    = "COLLAB_BUDGET_USD"
	envBudgetTokens = "COLLAB_BUDGET_TOKENS"
	envWorktrees    = "COLLAB_WORKTREES"
)

// inherited are the variables of a delegator's model run that must not
// reach the delegated watcher: they describe the delegator's run, or are
// the delegator's.
var inherited = []string{"COLLAB_AGENT", "COLLAB_CHANNEL", "COLLAB_MESSAGE_ID", "COLLAB_FROM", watcher.EnvHops,
	"COLLAB_CLI", "COLLAB_CMD", "COLLAB_MODEL", "COLLAB_WORKDIR", sessions.EnvWorktree, sessions.EnvBranch,
	sessions.EnvDelegatedBy, sessions.EnvSession, sessions.EnvDepth,
	envKey} // the delegator's own key: the new agent's is its own (sessionEnv)

// sessionEnv are the variables a session's record may set for its
// watcher: those runDelegate records. startSession refuses a record that
// sets any other (a loader variable such as LD_PRELOAD would run code in
// the watcher): the record is this account's and no one else's to write
// (sessions.Check), and it never needs more.
var sessionEnv = []string{sessions.EnvDepth, sessions.EnvWorktree, sessions.EnvBranch,
	sessions.EnvDelegatedBy, sessions.EnvSession, envKey}

func runDelegate(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "ls":
			return runDelegateLs(args[1:], getenv, stdout, stderr)
		case "status":
			return runDelegateStatus(ctx, args[1:], getenv, stdout, stderr)
		case "send":
			return runDelegateSend(ctx, args[1:], getenv, stdin, stdout, stderr)
		case "stop":
			return runDelegateStop(args[1:], getenv, stdout, stderr, false)
		case "rm":
			return runDelegateStop(args[1:], getenv, stdout, stderr, true)
		}
	}
	fs := newFlags("delegate", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab delegate --repo DIR [--base BRANCH] [--branch NAME] [--cli claude|codex|gemini|command] [--cmd PROGRAM] [--model M] [--title T] [--wait] [--json] PROMPT…
       collab delegate ls [--json]
       collab delegate status ID [--json]
       collab delegate send ID TEXT…
       collab delegate stop ID
       collab delegate rm ID [--force]

Hand work to a new agent: add a git worktree of the repository on a new
branch (named from --title or the prompt unless --branch is given; never an
existing branch), start a watcher for the agent NAME-ID (NAME the
delegator) working in it on its own channel delegate-ID, detached on this
host, post the prompt to it, and print the session. With --wait, wait for
its first answer as send --wait does. The agent signs with a key made for
it ($XDG_CONFIG_HOME/collab/keys/NAME-ID.key), never the delegator's;
what it signs verifies once the admin runs the 'collab key trust' printed.

Worktrees go in REPO/../.collab-worktrees/REPO-NAME/BRANCH, or under
$COLLAB_WORKTREES. Limits: a delegator at depth --max-depth (delegated
agents have COLLAB_DELEGATION_DEPTH) or with --max-concurrent active
sessions is refused (exit 4). A failed delegate leaves nothing behind.

ID is the session id (or the agent id). stop ends the agent's watcher
(the worktree stays); rm stops it and removes the worktree and the agent's
key, refusing a worktree with uncommitted changes (exit 4) unless --force;
the branch is kept. stop, rm and resume act only on a record of this
account's that no other account can write (exit 4 otherwise).

Flags:
`)
		fs.PrintDefaults()
	}
	agent := agentFlag(fs, "", "the delegator's agent ID", true)
	repo := fs.String("repo", ".", "a folder of the git repository to work on")
	base := fs.String("base", "", "the branch (or commit) the new branch starts from (default: the repository's current branch)")
	branch := fs.String("branch", "", "the new branch's name (default: made from --title or the prompt)")
	cli := fs.String("cli", "claude", "the delegated agent's CLI adapter: claude, codex, gemini or command")
	fromEnv(fs, "cli", "COLLAB_DELEGATE_CLI")
	cmdline := fs.String("cmd", "", "command line of its CLI (as collab watch --cmd)")
	model := fs.String("model", "", "model for its CLI")
	title := fs.String("title", "", "the session's title")
	wait := fs.Bool("wait", false, "wait for the first answer and print it (exit 3 on timeout, 4 when refused)")
	timeout := fs.Duration("timeout", defaultWaitTimeout, "with --wait: give up after this long (0: wait until interrupted)")
	asJSON := fs.Bool("json", false, "print the session as JSON (with --wait: and the answer)")
	worktrees := fs.String("worktrees", "", "the folder worktrees go under (default REPO/../.collab-worktrees; "+envWorktrees+")")
	fromEnv(fs, "worktrees", envWorktrees)
	maxDepth := fs.Int("max-depth", sessions.DefaultMaxDepth, "refuse when the delegator's own delegation depth is this (0: no limit)")
	maxConc := fs.Int("max-concurrent", sessions.DefaultMaxConcurrent, "refuse when the delegator has this many active sessions (0: no limit)")
	maxHops := fs.Int("max-hops", 0, "the delegated watcher's --max-hops (default: the delegator's, "+envMaxHops+")")
	fromEnv(fs, "max-hops", envMaxHops)
	budgetUSD := fs.Float64("budget-usd", 0, "the delegated watcher's --budget-usd (default: the delegator's, "+envBudgetUSD+")")
	fromEnv(fs, "budget-usd", envBudgetUSD)
	budgetTokens := fs.Int64("budget-tokens", 0, "the delegated watcher's --budget-tokens (default: the delegator's, "+envBudgetTokens+")")
	fromEnv(fs, "budget-tokens", envBudgetTokens)
	poll := fs.Duration("poll", watcher.DefaultPoll, "the delegated watcher's poll interval")
	heartbeat := fs.Duration("heartbeat", watcher.DefaultHeartbeat, "the delegated watcher's heartbeat interval")
	startTimeout := fs.Duration("start-timeout", time.Minute, "how long to wait for the delegated agent to be AWAKE")
	keyf := keyFlag(fs)
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	root := tree.Resolve(*rootf, getenv)
	from, err := actingAgent(ctx, "delegate", "delegator", *agent)
	if err != nil {
		return err
	}
	signer, err := loadSigner(*keyf, from, getenv)
	if err != nil {
		return fmt.Errorf("delegate: %w", err)
	}
	prompt, err := messageText(false, "", fs.Args(), stdin)
	if err != nil {
		return usageErrorf("delegate: %v", strings.TrimPrefix(err.Error(), "send: "))
	}
	switch *cli {
	case "claude", "codex", "gemini", "command":
	default:
		return usageErrorf("delegate: --cli %q: use claude, codex, gemini or command", *cli)
	}
	if *cli == "command" && *cmdline == "" {
		return usageErrorf("delegate: --cli command needs --cmd")
	}
	if fs.Changed("timeout") && !*wait {
		return usageErrorf("delegate: --timeout needs --wait")
	}
	if *branch != "" {
		if err := worktree.CheckBranch(*branch); err != nil {
			return usageErrorf("delegate: --branch: %v", err)
		}
	}
	// here is the working tree the work starts from (its branch is the
	// default base); repoDir the repository's main working tree, where
	// the new worktree is made and recorded, so that a delegation from
	// inside a delegated agent's worktree goes beside it, not into it.
	here, err := worktree.Repo(ctx, *repo)
	if err != nil {
		return usageErrorf("delegate: --repo: %v", err)
	}
	repoDir, err := worktree.Main(ctx, here)
	if err != nil {
		return usageErrorf("delegate: --repo: %v", err)
	}
	if *base == "" {
		if *base, err = worktree.CurrentBranch(ctx, here); err != nil {
			return fmt.Errorf("delegate: %w", err)
		}
		if *base == "" { // detached: start from its commit
			if *base, err = worktree.Commit(ctx, here, "HEAD"); err != nil {
				return fmt.Errorf("delegate: %w", err)
			}
		}
	}
	if _, err := worktree.Commit(ctx, repoDir, *base); err != nil {
		return usageErrorf("delegate: --base %q: %v", *base, err)
	}
	depth := sessions.Depth(getenv)
	if err := sessions.CheckLimits(root, from, depth, *maxDepth, *maxConc); err != nil {
		var le *sessions.LimitError
		if errors.As(err, &le) {
			return &exitError{code: exitRefused, msg: "delegate: " + err.Error()}
		}
		return fmt.Errorf("delegate: %w", err)
	}

	d := &delegation{root: root, getenv: getenv, s: &sessions.Session{
		DelegatedBy: from, Depth: depth + 1, Repo: repoDir, Base: *base, CLI: *cli, Cmd: *cmdline,
		Model: *model, Title: *title, Host: hostname(), Status: sessions.Starting,
	}}
	ok := false
	defer func() {
		if !ok {
			d.undo(stderr)
		}
	}()
	if err := d.create(); err != nil {
		return fmt.Errorf("delegate: %w", err)
	}
	if onDelegateCreated != nil {
		onDelegateCreated(root)
	}
	if *maxConc > 0 {
		// Again with this record: a delegation that raced this one
		// between the check and the record counts too.
		n, err := sessions.CountActive(root, from)
		if err != nil {
			return fmt.Errorf("delegate: %w", err)
		}
		if n > *maxConc {
			le := &sessions.LimitError{Err: sessions.ErrConcurrency, Delegator: from, Have: n - 1, Max: *maxConc}
			return &exitError{code: exitRefused, msg: "delegate: " + le.Error()}
		}
	}
	if err := d.makeKey(); err != nil {
		return fmt.Errorf("delegate: %w", err)
	}
	s := d.s
	if *branch != "" {
		exists, err := worktree.BranchExists(ctx, repoDir, *branch)
		if err != nil {
			return fmt.Errorf("delegate: %w", err)
		}
		if exists {
			return usageErrorf("delegate: --branch %s exists in %s; give another name, or none to have one made", *branch, repoDir)
		}
		s.Branch = *branch
	} else {
		var gitErr error
		s.Branch = worktree.BranchName("", cmp.Or(*title, prompt), func(name string) bool {
			exists, err := worktree.BranchExists(ctx, repoDir, name)
			if err != nil {
				gitErr = err
				return false
			}
			return exists
		})
		if gitErr != nil {
			return fmt.Errorf("delegate: %w", gitErr)
		}
	}
	if *worktrees != "" {
		// Absolute: the watcher, and collab resume, run elsewhere.
		if *worktrees, err = filepath.Abs(*worktrees); err != nil {
			return fmt.Errorf("delegate: --worktrees: %w", err)
		}
	}
	s.Worktree = worktree.DefaultPath(*worktrees, repoDir, s.Branch)
	if _, err := os.Lstat(s.Worktree); err == nil {
		return fmt.Errorf("delegate: %s exists; remove it or give another --branch", s.Worktree)
	}
	if err := worktree.Add(ctx, repoDir, s.Base, s.Branch, s.Worktree); err != nil {
		return fmt.Errorf("delegate: %w", err)
	}
	d.added = true
	s.Args = []string{"watch", "--root", string(root), "--agent", s.Agent, "--channel", s.Channel,
		"--cli", s.CLI, "--workdir", s.Worktree, "--poll", poll.String(), "--heartbeat", heartbeat.String()}
	if s.Cmd != "" {
		s.Args = append(s.Args, "--cmd", s.Cmd)
	}
	if s.Model != "" {
		s.Args = append(s.Args, "--model", s.Model)
	}
	if *maxHops != 0 {
		s.Args = append(s.Args, "--max-hops", strconv.Itoa(*maxHops))
	}
	if *budgetUSD > 0 {
		s.Args = append(s.Args, "--budget-usd", strconv.FormatFloat(*budgetUSD, 'f', -1, 64))
	}
	if *budgetTokens > 0 {
		s.Args = append(s.Args, "--budget-tokens", strconv.FormatInt(*budgetTokens, 10))
	}
	s.Env = []string{
		sessions.EnvDepth + "=" + strconv.Itoa(s.Depth),
		sessions.EnvWorktree + "=" + s.Worktree,
		sessions.EnvBranch + "=" + s.Branch,
		sessions.EnvDelegatedBy + "=" + s.DelegatedBy,
		sessions.EnvSession + "=" + s.ID,
		envKey + "=" + s.Key, // its own key; never the delegator's
	}
	s.Log = "delegate-" + s.ID + ".log"
	if err := sessions.Update(root, s); err != nil {
		return fmt.Errorf("delegate: %w", err)
	}
	if err := d.start(ctx, *startTimeout); err != nil {
		return fmt.Errorf("delegate: %w", err)
	}

	m := &channel.Message{SessionID: s.Channel, From: from, To: s.Agent, Type: "task_assign",
		Content: channel.Content{Text: prompt}}
	m.Metadata.Host = hostname()
	m.Metadata.Hops = watcher.RunHops(getenv) + 1
	if *wait {
		m.SetAwaitReply()
	}
	var waitFrom *channel.Reader
	if *wait {
		if waitFrom, err = delegate.Before(root, s.Channel, delegate.Options{}); err != nil {
			return fmt.Errorf("delegate: %w", err)
		}
	}
	w := &channel.Writer{Root: root, Signer: signer}
	if err := w.Post(m); err != nil {
		return fmt.Errorf("delegate: post the prompt: %w", err)
	}
	ok = true
	if !*asJSON {
		fmt.Fprintf(stderr, "collab: %s signs with a key of its own (%s); until the admin who ran 'collab init' trusts it, nothing it signs verifies:\n  %s\n",
			s.Agent, s.Key, trustCommand(s))
	}
	if *asJSON && !*wait {
		return writeJSON(stdout, sessionView(s))
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "session %s: agent %s, branch %s, worktree %s, channel %s (prompt %s)\n", s.ID, s.Agent, s.Branch, s.Worktree, s.Channel, m.ID)
	} else {
		fmt.Fprintf(stderr, "collab: session %s: agent %s, branch %s, worktree %s, channel %s\n", s.ID, s.Agent, s.Branch, s.Worktree, s.Channel)
	}
	fmt.Fprintf(stderr, "collab: sent %s; waiting for the answer\n", m.ID)
	rw := replyWait{root: root, channel: s.Channel, id: m.ID, timeout: *timeout,
		opt: delegate.Options{NotFrom: from, Poll: time.Second}, json: *asJSON, reader: waitFrom, track: true}
	return rw.run(ctx, &natsFlags{}, getenv, stdout, stderr)
}

// onDelegateCreated, when set (by tests), is called once a delegation's
// record is made.
var onDelegateCreated func(root tree.Root)

// delegation is a session being set up, and what undo must take back.
type delegation struct {
	root    tree.Root
	getenv  env
	s       *sessions.Session
	created bool   // its record
	key     string // its agent's key file, made
	added   bool   // its worktree and branch
	proc    *detached
}

// create makes the record under a new ID no other session or agent has.
func (d *delegation) create() error {
	for range 20 {
		id := sessions.NewID()
		d.s.ID, d.s.Agent, d.s.Channel = id, sessions.AgentID(d.s.DelegatedBy, id), sessions.Channel(id)
		if _, err := presence.Read(d.root, d.s.Agent); err == nil {
			continue // an agent of that name exists
		}
		if _, err := os.Lstat(signing.DefaultKeyPath(d.s.Agent, d.getenv)); err == nil {
			continue // a key of that name exists (another tree's agent)
		}
		d.s.Created = time.Now().UTC()
		err := sessions.Create(d.root, d.s)
		if errors.Is(err, sessions.ErrExists) {
			continue
		}
		if err != nil {
			return err
		}
		d.created = true
		return nil
	}
	return errors.New("no free session id")
}

// makeKey makes the agent's own key pair, in the delegator's key folder
// as collab key new would (mode 0600), and records it in the session: the agent signs with it, never with the
// delegator's key.
func (d *delegation) makeKey() error {
	path := signing.DefaultKeyPath(d.s.Agent, d.getenv)
	sg, err := signing.NewKey(path, d.s.Agent, false)
	if err != nil {
		return fmt.Errorf("the delegated agent's key: %w", err)
	}
	d.key, d.s.Key, d.s.PublicKey = path, path, sg.PublicKey()
	return nil
}

// undo takes back what the failed delegation did: its process, worktree,
// branch, key and record.
func (d *delegation) undo(stderr io.Writer) {
	ctx := context.Background()
	if d.proc != nil {
		d.proc.kill()
	}
	if d.key != "" {
		if err := os.Remove(d.key); err != nil {
			fmt.Fprintf(stderr, "collab: warning: %v\n", err)
		}
	}
	if d.added {
		if err := worktree.Remove(ctx, d.s.Repo, d.s.Worktree, true); err != nil {
			fmt.Fprintf(stderr, "collab: warning: %v\n", err)
		}
		if err := worktree.DeleteBranch(ctx, d.s.Repo, d.s.Branch); err != nil {
			fmt.Fprintf(stderr, "collab: warning: %v\n", err)
		}
	}
	if d.created {
		if err := sessions.Delete(d.root, d.s.ID); err != nil {
			fmt.Fprintf(stderr, "collab: warning: %v\n", err)
		}
	}
}

// start runs the session's watcher detached and waits until it is AWAKE,
// then records it running.
func (d *delegation) start(ctx context.Context, timeout time.Duration) error {
	p, err := startSession(ctx, d.root, d.s, timeout)
	if p != nil {
		d.proc = p
	}
	return err
}

// startSession runs s's watcher detached with its recorded arguments and
// waits until its presence is AWAKE from that process; then it records s
// running with the process's pid. On failure the process is ended.
func startSession(ctx context.Context, root tree.Root, s *sessions.Session, timeout time.Duration) (*detached, error) {
	if err := checkSessionEnv(s); err != nil {
		return nil, err
	}
	env := clearEnv(s.Env)
	p, err := spawnDetached(root, s.Log, "", s.Args, env)
	if err != nil {
		return nil, err
	}
	err = p.await(ctx, timeout, "delegate", s.Agent+" is not AWAKE", func() bool {
		st, err := presence.Read(root, s.Agent)
		return err == nil && st.State == presence.StateAwake && st.WatcherPID == p.pid()
	})
	if err == nil {
		s.PID, s.Status = p.pid(), sessions.Running
		err = sessions.Update(root, s)
	}
	if err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

// checkSessionEnv refuses a session whose record sets a variable for its
// watcher that runDelegate never sets (sessionEnv), or that names as its
// key another file than its own agent's.
func checkSessionEnv(s *sessions.Session) error {
	for _, kv := range s.Env {
		k, v, _ := strings.Cut(kv, "=")
		if !slices.Contains(sessionEnv, k) {
			return fmt.Errorf("the record of session %s sets %s for its watcher, which collab delegate never does; remove the record", s.ID, tree.Printable(k))
		}
		if k == envKey && v != "" && (v != s.Key || filepath.Base(v) != s.Agent+".key") {
			return fmt.Errorf("the record of session %s gives its watcher the key %s, not %s's own; remove the record", s.ID, tree.Printable(v), s.Agent)
		}
	}
	return nil
}

// removeKey removes the key made for s's agent (rm): the file the record
// names, when it is that agent's key file.
func removeKey(s *sessions.Session) error {
	if s.Key == "" || filepath.Base(s.Key) != s.Agent+".key" {
		return nil
	}
	if err := os.Remove(s.Key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// trustCommand is the command the admin runs to trust s's agent's key.
func trustCommand(s *sessions.Session) string {
	if s.PublicKey == "" {
		return ""
	}
	return "collab key trust " + s.Agent + " " + s.PublicKey
}

// clearEnv is env preceded by an empty setting of each inherited variable
// that env does not set, so the detached watcher does not take them from
// the delegator's run (a later setting wins in os/exec).
func clearEnv(env []string) []string {
	var out []string
	for _, k := range inherited {
		out = append(out, k+"=")
	}
	return append(out, env...)
}

// sessionJSON is a session as delegate prints it.
type sessionJSON struct {
	*sessions.Session
	SessionID    string `json:"sessionId"`
	WorkerID     string `json:"workerId"`
	WorktreePath string `json:"worktreePath"`
	Trust        string `json:"trust,omitempty"` // the admin's command to trust its key
}

func sessionView(s *sessions.Session) sessionJSON {
	return sessionJSON{Session: s, SessionID: s.ID, WorkerID: s.Agent, WorktreePath: s.Worktree, Trust: trustCommand(s)}
}

func runDelegateLs(args []string, getenv env, stdout, stderr io.Writer) error {
	fs := newFlags("delegate ls", stderr)
	asJSON := fs.Bool("json", false, "print the sessions as JSON")
	all := fs.Bool("all", false, "also removed sessions")
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	root := tree.Resolve(*rootf, getenv)
	list, err := sessions.List(root)
	if err != nil {
		return fmt.Errorf("delegate ls: %w", err)
	}
	now := time.Now()
	type row struct {
		*sessions.Session
		State string `json:"state"`
	}
	var rows []row
	for i := range list {
		if list[i].Status == sessions.Removed && !*all {
			continue
		}
		rows = append(rows, row{&list[i], agentState(root, list[i].Agent, now)})
	}
	if *asJSON {
		if rows == nil {
			rows = []row{}
		}
		return writeJSON(stdout, rows)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tSTATE\tSTATUS\tBY\tBRANCH\tWORKTREE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Agent, r.State, r.Status, r.DelegatedBy,
			tree.Printable(r.Branch), tree.Printable(r.Worktree))
	}
	return tw.Flush()
}

// agentState is the agent's presence as who shows it.
func agentState(root tree.Root, agent string, now time.Time) string {
	st, err := presence.Read(root, agent)
	if err != nil {
		return presence.StateOffline
	}
	return st.Effective(now, 0, hostname(), proc.PIDAlive)
}

// findSession is the session ID names, for the command cmd.
func findSession(cmd string, root tree.Root, id string) (*sessions.Session, error) {
	s, err := sessions.Find(root, id)
	if errors.Is(err, sessions.ErrNotFound) {
		return nil, &exitError{code: exitNothing, msg: fmt.Sprintf("%s: no session %s (see collab delegate ls)", cmd, id)}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return s, nil
}

// maxStatusJobs bounds the jobs delegate status shows.
const maxStatusJobs = 5

func runDelegateStatus(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	fs := newFlags("delegate status", stderr)
	asJSON := fs.Bool("json", false, "print the status as JSON")
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("delegate status: want one session ID")
	}
	root := tree.Resolve(*rootf, getenv)
	s, err := findSession("delegate status", root, fs.Arg(0))
	if err != nil {
		return err
	}
	out := struct {
		*sessions.Session
		State string           `json:"state"`
		Jobs  []jobs.Job       `json:"jobs"`
		Last  *channel.Message `json:"last_message,omitempty"`
		Git   *worktree.State  `json:"git,omitempty"`
		Error string           `json:"git_error,omitempty"`
	}{Session: s, State: agentState(root, s.Agent, time.Now()), Jobs: []jobs.Job{}}
	if js, err := jobs.List(root, s.Agent); err == nil {
		if len(js) > maxStatusJobs {
			js = js[:maxStatusJobs] // newest first
		}
		for i := range js {
			js[i].Events = nil
		}
		out.Jobs = js
	}
	if msgs, _, err := channel.Tail(root, s.Channel, "", 1); err == nil && len(msgs) == 1 {
		out.Last = &msgs[0]
	}
	if s.Status != sessions.Removed {
		if st, err := worktree.Status(ctx, s.Worktree, s.Base); err == nil {
			out.Git = st
		} else {
			out.Error = err.Error()
		}
	}
	if *asJSON {
		return writeJSON(stdout, out)
	}
	p := tree.Printable
	fmt.Fprintf(stdout, "session %s: agent %s %s (%s), delegated by %s\n", s.ID, s.Agent, out.State, s.Status, s.DelegatedBy)
	fmt.Fprintf(stdout, "branch %s from %s, worktree %s, channel %s\n", p(s.Branch), p(s.Base), p(s.Worktree), s.Channel)
	if out.Git != nil {
		fmt.Fprintf(stdout, "commits ahead of %s: %d\n", p(s.Base), out.Git.Ahead)
		if len(out.Git.Dirty) > 0 {
			fmt.Fprintf(stdout, "uncommitted: %s\n", p(strings.Join(out.Git.Dirty, ", ")))
		} else {
			fmt.Fprintln(stdout, "uncommitted: none")
		}
	} else if out.Error != "" {
		fmt.Fprintf(stdout, "git: %s\n", p(out.Error))
	}
	for _, j := range out.Jobs {
		fmt.Fprintf(stdout, "job %s %s (message %s)\n", j.ID, j.Status, j.Message)
	}
	if m := out.Last; m != nil {
		text := m.Content.Text
		if len(text) > 500 {
			text = text[:500] + "…"
		}
		fmt.Fprintf(stdout, "last message %s from %s:\n%s\n", m.ID, m.From, p(text))
	}
	return nil
}

// runDelegateSend is collab send to the session's agent in its channel:
// delegate send ID [send's flags] TEXT….
func runDelegateSend(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
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
	root := tree.Resolve(rootf, getenv)
	s, err := findSession("delegate send", root, id)
	if err != nil {
		return err
	}
	return runSend(ctx, append([]string{"--channel", s.Channel, "--to", s.Agent}, rest...), getenv, stdin, stdout, stderr)
}

func runDelegateStop(args []string, getenv env, stdout, stderr io.Writer, remove bool) error {
	cmd := "delegate stop"
	if remove {
		cmd = "delegate rm"
	}
	fs := newFlags(cmd, stderr)
	force := fs.Bool("force", false, "rm: remove the worktree even with uncommitted changes")
	grace := fs.Duration("timeout", watcher.DefaultGrace+10*time.Second, "how long the watcher may take to stop before it is killed")
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("%s: want one session ID", cmd)
	}
	if !remove && *force {
		return usageErrorf("%s: --force is rm's", cmd)
	}
	root := tree.Resolve(*rootf, getenv)
	s, err := findSession(cmd, root, fs.Arg(0))
	if err != nil {
		return err
	}
	if s.Status == sessions.Removed {
		return &exitError{code: exitNothing, msg: fmt.Sprintf("%s: session %s was removed", cmd, s.ID)}
	}
	if s.Host != hostname() {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("%s: session %s runs on host %s; run this there", cmd, s.ID, s.Host)}
	}
	if err := checkRecord(root, s); err != nil {
		return &exitError{code: exitRefused, msg: fmt.Sprintf("%s: session %s: %v", cmd, s.ID, err)}
	}
	ctx := context.Background()
	if remove && !*force {
		// Refuse before stopping anything.
		if st, err := worktree.Status(ctx, s.Worktree, ""); err == nil && len(st.Dirty) > 0 {
			return dirtyRefusal(cmd, s, st.Dirty)
		}
	}
	if err := stopSession(root, s, *grace); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if !remove {
		fmt.Fprintf(stdout, "session %s: %s stopped; its worktree %s stays\n", s.ID, s.Agent, s.Worktree)
		return nil
	}
	err = worktree.Remove(ctx, s.Repo, s.Worktree, *force)
	var de *worktree.DirtyError
	if errors.As(err, &de) {
		return dirtyRefusal(cmd, s, de.Files)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	s.Status = sessions.Removed
	if err := sessions.Update(root, s); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if err := removeKey(s); err != nil {
		fmt.Fprintf(stderr, "collab: warning: %s's key: %v\n", s.Agent, err)
	}
	fmt.Fprintf(stdout, "session %s: %s stopped, worktree %s and its key removed; branch %s kept\n", s.ID, s.Agent, s.Worktree, s.Branch)
	return nil
}

func dirtyRefusal(cmd string, s *sessions.Session, files []string) error {
	return &exitError{code: exitRefused, msg: fmt.Sprintf("%s: worktree %s has uncommitted changes (commit them, or --force to lose them):\n  %s",
		cmd, tree.Printable(s.Worktree), tree.Printable(strings.Join(files, "\n  ")))}
}

// stopSession ends s's watcher and records it stopped (sessions.Stop).
func stopSession(root tree.Root, s *sessions.Session, grace time.Duration) error {
	return sessions.Stop(root, s, hostname(), grace)
}

// recordPath is the file of session id's record.
func recordPath(root tree.Root, id string) string { return sessions.Path(root, id) }

// checkRecord refuses s's record unless this account may act on it
// (sessions.Check): its own, and writable by no one else.
func checkRecord(root tree.Root, s *sessions.Session) error {
	return sessions.Check(root, s, getuid())
}

// getuid is os.Getuid; tests that cannot chown make it another account's.
var getuid = os.Getuid

// sessionAlive reports whether s's recorded process still runs it on
// this host (sessions.Alive).
func sessionAlive(s *sessions.Session) bool { return sessions.Alive(s) }

func runResume(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("resume", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab resume [--dry-run]

Restart, detached, every delegated agent (collab delegate) recorded as
running on this host whose watcher is gone (the host restarted, or its
watchers were killed), with the arguments it was started with; and every
workflow instance started with collab start --background whose process is
gone (without its setup and kickoff, which ran the first time). Only the
records this account owns are acted on; one of them that another account
could have written (group- or world-writable, or with another name) is
refused, and resume exits 1: check it, then chmod go-w it, or remove it.
Run at boot by deploy/collab-resume.service.

Flags:
`)
		fs.PrintDefaults()
	}
	dry := fs.Bool("dry-run", false, "only list what would be restarted")
	startTimeout := fs.Duration("start-timeout", time.Minute, "how long to wait for each agent to be AWAKE")
	rootf := rootFlag(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("resume: unexpected argument %q", fs.Arg(0))
	}
	root := tree.Resolve(*rootf, getenv)
	list, err := sessions.List(root)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	var failed []string
	for i := range list {
		s := &list[i]
		if s.Status != sessions.Running || s.Host != hostname() || sessionAlive(s) || len(s.Args) == 0 || s.Args[0] != "watch" {
			continue
		}
		if err := checkRecord(root, s); errors.Is(err, sessions.ErrForeign) {
			fmt.Fprintf(stderr, "collab: resume: skipping session %s: its record is not this account's\n", s.ID)
			continue
		} else if err != nil {
			fmt.Fprintf(stderr, "collab: resume: session %s: %v\n", s.ID, err)
			failed = append(failed, s.ID)
			continue
		}
		if *dry {
			fmt.Fprintf(stdout, "would restart session %s (%s)\n", s.ID, s.Agent)
			continue
		}
		if _, err := startSession(ctx, root, s, *startTimeout); err != nil {
			fmt.Fprintf(stderr, "collab: resume: session %s: %v\n", s.ID, err)
			failed = append(failed, s.ID)
			continue
		}
		fmt.Fprintf(stdout, "session %s: %s restarted (pid %d)\n", s.ID, s.Agent, s.PID)
	}
	failed = append(failed, resumeWorkflows(ctx, root, *dry, *startTimeout, stdout, stderr)...)
	if len(failed) > 0 {
		return fmt.Errorf("resume: not restarted: %s", strings.Join(failed, ", "))
	}
	return nil
}

// resumeWorkflows restarts the workflow instances started with start
// --background on this host, recorded running, whose process is gone; it
// returns those it could not restart. A resumed instance runs no setup
// and posts no kickoff.
func resumeWorkflows(ctx context.Context, root tree.Root, dry bool, timeout time.Duration, stdout, stderr io.Writer) (failed []string) {
	recs, err := workflow.Records(root)
	if err != nil {
		fmt.Fprintf(stderr, "collab: resume: %v\n", err)
		return []string{"workflows"}
	}
	for _, r := range recs {
		name := r.Name + "@" + r.Instance
		if r.Status != workflow.Running || r.Host != hostname() || len(r.Args) == 0 ||
			r.PID > 0 && proc.PIDAlive(r.PID) && proc.GroupHasEnv(r.PID, envBackgroundChild+"=1") {
			continue
		}
		if err := workflow.CheckRecord(root, &r, getuid()); errors.Is(err, sessions.ErrForeign) {
			fmt.Fprintf(stderr, "collab: resume: skipping %s: its record is not this account's\n", name)
			continue
		} else if err != nil {
			fmt.Fprintf(stderr, "collab: resume: %s: %v\n", name, err)
			failed = append(failed, name)
			continue
		}
		if err := workflow.CheckFile(r.Dir, r.File, getuid()); err != nil {
			fmt.Fprintf(stderr, "collab: resume: %s: %v\n", name, err)
			failed = append(failed, name)
			continue
		}
		if dry {
			fmt.Fprintf(stdout, "would restart %s\n", name)
			continue
		}
		logName := r.Name + workflow.Sep + r.Instance + ".log"
		d, err := spawnDetached(root, logName, r.Dir, append([]string{"start"}, r.Args...),
			[]string{envBackgroundChild + "=1", envWorkflowResume + "=1"})
		if err == nil {
			started := time.Now().Add(-time.Second)
			err = d.await(ctx, timeout, "resume", name+" is not running", func() bool {
				recs, _ := workflow.Records(root)
				for _, n := range recs {
					if n.Name == r.Name && n.Instance == r.Instance && n.PID == d.pid() && n.Started.After(started) && n.Status == workflow.Running {
						return true
					}
				}
				return false
			})
			if err != nil {
				d.kill()
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "collab: resume: %s: %v\n", name, err)
			failed = append(failed, name)
			continue
		}
		fmt.Fprintf(stdout, "%s restarted (pid %d)\n", name, d.pid())
	}
	return failed
}
