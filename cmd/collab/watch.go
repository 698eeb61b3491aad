package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
	"github.com/collabdev/collab/internal/agent/pricing"
	"github.com/collabdev/collab/internal/agent/prompt"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/watcher"
)

func runWatch(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("watch", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab watch --agent A --channel C [--channel C2 …] --cli command --cmd 'PROGRAM ARGS…' [flags]

Run the watcher daemon of agent A: answer every message addressed to A in
the channels by running the model CLI, and post its output as the reply.
The prompt goes to the CLI's standard input, or replaces a {prompt}
argument. One signal stops it gracefully; a second one at once.

The agent is required (--agent or COLLAB_AGENT) and, unlike the commands a
person runs, never taken from the login name: a watcher is a daemon that
answers as the agent it serves, often under a service account.

On a host without the mount, --remote (or COLLAB_REMOTE=1) runs the same
watcher on a local mirror of its channels, STATE/tree (--state-dir): the
messages come from the NATS stream, its claims are decided on the mount
and everything it writes goes there through a bridge (collab bridge on a
mounted host). It needs --nats (or NATS_URL) and the agent's signing key;
--root is not used. See README "Hosts without the mount".

Flags:
`)
		fs.PrintDefaults()
	}
	var s watchSettings
	agent := agentFlag(fs, "", "agent ID", false)
	fs.StringArrayVar(&s.Channels, "channel", nil, "channel to watch, repeatable; in the variable, comma-separated")
	fromEnv(fs, "channel", envChannel)
	fs.StringVar(&s.CLI, "cli", defaultCLI, "CLI adapter: claude, codex, gemini or command")
	fromEnv(fs, "cli", "COLLAB_CLI")
	fs.StringVar(&s.Cmd, "cmd", "", "command line of the CLI, split like shell words but run without a shell")
	fromEnv(fs, "cmd", "COLLAB_CMD")
	fs.StringArrayVar(&s.CLIArgs, "cli-arg", nil, "extra argument for the CLI, repeatable; each value is exactly one argument")
	fs.StringVar(&s.Model, "model", "", "model for the CLI")
	fromEnv(fs, "model", "COLLAB_MODEL")
	fs.StringVar(&s.SessionScope, "session-scope", watcher.DefaultSessionScope, "which messages resume one CLI session: channel, thread or none")
	fs.DurationVar(&s.SessionTTL, "session-ttl", watcher.DefaultSessionTTL, "how long an unused CLI session is resumed")
	fs.Float64Var(&s.BudgetUSD, "budget-usd", 0, "stop running the CLI for the rest of the UTC day once its runs cost this much (0: no limit); codex's and gemini's tokens are priced from --prices")
	fs.Int64Var(&s.BudgetTokens, "budget-tokens", 0, "stop running the CLI for the rest of the UTC day once its runs used this many tokens, input and output (0: no limit)")
	fs.StringVar(&s.Prices, "prices", "", "JSON price table whose models replace or add to the shipped prices, in USD per million tokens (see README)")
	fromEnv(fs, "prices", envPrices)
	fs.IntVar(&s.MaxTurns, "max-turns", 0, "stop a CLI run after this many turns, a failure (claude: its --max-turns; others: counted by the watcher) (0: no limit)")
	fs.StringVar(&s.Role, "role", "", "the agent's role: a file to read, or the text itself")
	fs.StringArrayVar(&s.Memory, "memory", nil, "file read fresh into every prompt, repeatable (e.g. CURRENT-STATE.md)")
	contextN := fs.Int("context", watcher.DefaultContext, "recent messages in the prompt's transcript (0: none)")
	fs.StringVar(&s.PromptTemplate, "prompt-template", "", "Go text/template file that replaces the built-in prompt")
	fs.StringVar(&s.Workdir, "workdir", "", "working directory of the CLI")
	fromEnv(fs, "workdir", "COLLAB_WORKDIR")
	fs.DurationVar(&s.Timeout, "timeout", watcher.DefaultTimeout, "longest CLI run; then its process group is killed")
	fs.BoolVar(&s.PostErrors, "post-errors", false, "post a short error reply when the CLI fails")
	fs.DurationVar(&s.Poll, "poll", watcher.DefaultPoll, "poll interval (polling is the truth on NFS), at least "+watcher.MinPoll.String())
	fs.DurationVar(&s.Heartbeat, "heartbeat", watcher.DefaultHeartbeat, "presence heartbeat interval, at least "+watcher.MinHeartbeat.String())
	fs.DurationVar(&s.Grace, "grace", watcher.DefaultGrace, "on shutdown, how long a running CLI may finish")
	fs.DurationVar(&s.ClaimGrace, "claim-grace", watcher.DefaultClaimGrace, "how stale another watcher's claim must be before taking it over")
	fs.IntVar(&s.MaxHops, "max-hops", watcher.DefaultMaxHops, "do not answer messages this deep in a reply chain (0: default, <0: off)")
	fs.IntVar(&s.Rate, "rate", watcher.DefaultRate, "CLI runs per minute at most; more messages wait (<0: off)")
	fs.IntVar(&s.PairRate, "pair-rate", watcher.DefaultPairRate, "replies per minute to one sender in agent chains (<0: off)")
	fs.StringVar(&s.Replay, "replay-since", "", "on start, also answer history: since a DURATION ago or after message ID")
	fs.BoolVar(&s.NoNotify, "no-fsnotify", false, "poll only; do not use inotify to wake early")
	fs.StringVar(&s.LogLevel, "log-level", defaultLogLevel, "debug, info, warn or error")
	fs.DurationVar(&s.RecoveryWindow, "recovery-window", watcher.DefaultRecoveryWindow, "when the state file is corrupt, answer what has no reply from this far back")
	fs.BoolVar(&s.AllowWorld, "allow-world-writable", false, "run even though a folder of the tree is world-writable without the sticky bit")
	fs.StringVar(&s.Trust, "trust", string(signing.DefaultPolicy), "which senders to act on: any, known (a sender with a trusted key must verify) or signed (verified senders only)")
	fromEnv(fs, "trust", envTrust)
	keyPath := keyFlag(fs)
	keyringDir := keyringFlag(fs)
	fs.BoolVar(&s.AllowWritableKeyring, "allow-writable-keyring", false, "accept a keyring this account can write (a single-account setup)")
	fs.BoolVar(&s.MCP, "mcp", false, "give the model the bus as MCP tools mid-task (collab mcp as this agent, on the message's channel); claude and codex")
	nf := addNATSFlags(fs)
	rootf := rootFlag(fs)
	rf := addRemoteFlags(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("watch: unexpected argument %q", fs.Arg(0))
	}
	s.Agent, s.Key, s.Keyring, s.NATS = *agent, *keyPath, *keyringDir, nf
	s.Context = *contextN
	if s.Context == 0 {
		s.Context = -1 // the flag's 0 is none; the settings' 0 is the default
	}
	if rf.on {
		return watchRemote(ctx, rf, s, getenv, stderr)
	}
	root := tree.Resolve(*rootf, getenv)
	w, err := prepareWatch(ctx, root, s, getenv, stderr)
	if err != nil {
		return err
	}
	defer w.Close()
	return watcher.Run(ctx, w.Config)
}

// defaultCLI is the adapter of a watcher given none (--cli, a workflow
// agent's cli).
const defaultCLI = "command"

// defaultLogLevel is the level of a watcher's log given none.
const defaultLogLevel = "info"

// watchSettings is every setting of one agent's watcher: the flags of
// collab watch, and the keys of a workflow's agent. A zero field takes the
// same default as the flag left out (the watcher package's Default
// constants, through watcher.Config's zero values), except where noted.
// Poll and Heartbeat are the exceptions: no agent key sets them, and
// below the minimum (0 included) they are refused, so the workflow
// commands pass their own --poll and --heartbeat.
type watchSettings struct {
	Agent    string
	Aliases  []string // other names the agent answers to (watcher.Config.Aliases)
	Channels []string

	CLI, Cmd, Model      string
	CLIArgs              []string
	SessionScope         string
	SessionTTL           time.Duration
	BudgetUSD            float64
	BudgetTokens         int64
	Prices               string // a price table file
	MaxTurns             int
	Role                 string // a file, or the text
	Memory               []string
	Context              int // 0: default, <0: none
	PromptTemplate       string
	Workdir              string
	Timeout              time.Duration
	PostErrors           bool
	Poll, Heartbeat      time.Duration // required: see above
	Grace, ClaimGrace    time.Duration
	RecoveryWindow       time.Duration
	MaxHops, Rate        int
	PairRate             int
	Replay               string
	NoNotify             bool
	LogLevel             string
	AllowWorld           bool
	Trust                string
	Key, Keyring         string // --key and --keyring as given ("": the defaults)
	AllowWritableKeyring bool
	MCP                  bool
	NATS                 *natsFlags // nil: no NATS
	MCPArgs              []string   // more arguments of --mcp's collab mcp (watch --remote's)
}

// preparedWatch is a watcher's configuration and what it holds open (its
// log file, its NATS connection) until Close.
type preparedWatch struct {
	Config watcher.Config
	closes []func()
}

// Close releases what prepareWatch opened, last first.
func (p *preparedWatch) Close() {
	for i := len(p.closes) - 1; i >= 0; i-- {
		p.closes[i]()
	}
	p.closes = nil
}

// prepareWatch checks s and turns it into a watcher.Config with its side
// things: the keyring and signer checks, the MCP wiring, the CLI adapter
// and its start checks, the logger (stderr and ROOT/logs/AGENT.log) and,
// when configured, the NATS connection. collab watch and the workflow
// commands both call it; errors are those of collab watch (usage: 2).
func prepareWatch(ctx context.Context, root tree.Root, s watchSettings, getenv env, stderr io.Writer) (_ *preparedWatch, err error) {
	if err := root.CheckShared(); err != nil && !errors.Is(err, os.ErrNotExist) {
		if !errors.Is(err, tree.ErrWorldWritable) {
			return nil, fmt.Errorf("watch: %w", err) // no flag allows it
		}
		if !s.AllowWorld {
			return nil, fmt.Errorf("watch: %w (or pass --allow-world-writable)", err)
		}
	}
	if dirs := root.Unsticky(s.Channels...); len(dirs) > 0 {
		fmt.Fprintf(stderr, "collab: warning: %s writable by the tree's group without the sticky bit, so any member can rename or remove another's files there: run 'collab init --group GROUP' again as the tree's owner (chmod +t for a channel's folder)\n",
			strings.Join(dirs, ", ")+map[bool]string{true: " is", false: " are"}[len(dirs) == 1])
	}
	if err := namedAgent("watch", s.Agent); err != nil {
		return nil, err
	}
	if len(s.Channels) == 0 {
		return nil, usageErrorf("watch: no channel: use --channel or %s", envChannel)
	}
	for _, ch := range s.Channels {
		if err := tree.CheckName("channel", ch); err != nil {
			return nil, usageErrorf("watch: %v", err)
		}
	}
	switch s.SessionScope {
	case "", watcher.ScopeChannel, watcher.ScopeThread, watcher.ScopeNone:
	default:
		return nil, usageErrorf("watch: --session-scope %q: use channel, thread or none", s.SessionScope)
	}
	if s.BudgetUSD < 0 {
		return nil, usageErrorf("watch: --budget-usd must not be negative")
	}
	if s.BudgetTokens < 0 {
		return nil, usageErrorf("watch: --budget-tokens must not be negative")
	}
	if s.MaxTurns < 0 {
		return nil, usageErrorf("watch: --max-turns must not be negative")
	}
	prices, err := pricing.Load(s.Prices)
	if err != nil {
		return nil, usageErrorf("watch: --prices: %v", err)
	}
	if s.Poll < watcher.MinPoll {
		return nil, usageErrorf("watch: --poll %v: the minimum is %v", s.Poll, watcher.MinPoll)
	}
	if s.Heartbeat < watcher.MinHeartbeat {
		return nil, usageErrorf("watch: --heartbeat %v: the minimum is %v", s.Heartbeat, watcher.MinHeartbeat)
	}
	policy, err := signing.ParsePolicy(cmp.Or(s.Trust, string(signing.DefaultPolicy)))
	if err != nil {
		return nil, usageErrorf("watch: --trust: %v", err)
	}
	ring, err := checkedKeyring("watch", root, s.Keyring, policy, s.AllowWritableKeyring, stderr)
	if err != nil {
		return nil, err
	}
	signer, err := loadSigner(s.Key, s.Agent, getenv)
	if err != nil {
		return nil, usageErrorf("watch: %v", err)
	}
	if signer == nil && policy != signing.Any && ring.HasKeys(s.Agent) {
		// Its own claims, heartbeats and replies would be unsigned in the
		// name of an agent with keys: forgeries to every other watcher.
		return nil, usageErrorf("watch: %s has keys in the keyring %s but this watcher has no private key (looked in %s): give it its key with --key or %s, or run with --trust any",
			s.Agent, ring.Dir(), cmp.Or(s.Key, signing.DefaultKeyPath(s.Agent, getenv)), envKey)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cmp.Or(s.LogLevel, defaultLogLevel))); err != nil {
		return nil, usageErrorf("watch: --log-level %q: use debug, info, warn or error", s.LogLevel)
	}
	nf := s.NATS
	if nf == nil {
		nf = &natsFlags{}
	}
	cli := cmp.Or(s.CLI, defaultCLI)
	servers, err := watchMCP(s.MCP, cli, root, s.Agent, nf, s.MCPArgs)
	if err != nil {
		return nil, err
	}
	runner, err := newRunner(cli, s.Cmd, s.Model, s.CLIArgs, servers, getenv)
	if err != nil {
		return nil, err
	}
	if err := checkRunnable(runnerProgram(runner), s.Workdir); err != nil {
		return nil, err
	}
	cfg := watcher.Config{
		Root:           root,
		RecoveryWindow: s.RecoveryWindow,
		Agent:          s.Agent,
		Aliases:        s.Aliases,
		Channels:       s.Channels,
		Runner:         runner,
		CLI:            cli,
		SessionScope:   s.SessionScope,
		SessionTTL:     s.SessionTTL,
		BudgetUSD:      s.BudgetUSD,
		BudgetTokens:   s.BudgetTokens,
		Prices:         prices,
		Memory:         s.Memory,
		Context:        s.Context,
		Workdir:        s.Workdir,
		Timeout:        s.Timeout,
		PostErrors:     s.PostErrors,
		Poll:           s.Poll,
		Heartbeat:      s.Heartbeat,
		Grace:          s.Grace,
		ClaimGrace:     s.ClaimGrace,
		MaxHops:        s.MaxHops,
		Rate:           s.Rate,
		PairRate:       s.PairRate,
		Hurry:          takeHurry(ctx),
		Signer:         signer,
		Verifier:       signing.NewVerifier(ring),
		Trust:          policy,
	}
	if c, ok := runner.(*claude.Adapter); ok {
		c.MaxTurns = s.MaxTurns // Claude Code stops itself
	} else {
		cfg.MaxTurns = s.MaxTurns
	}
	if cfg.Role, err = roleText(s.Role); err != nil {
		return nil, err
	}
	if s.PromptTemplate != "" {
		if cfg.Template, err = prompt.Load(s.PromptTemplate); err != nil {
			return nil, usageErrorf("watch: %v", err)
		}
	}
	if s.Replay != "" {
		if cfg.Replay, err = parseReplay(s.Replay, time.Now()); err != nil {
			return nil, err
		}
	}
	if !s.NoNotify {
		cfg.Wakers = append(cfg.Wakers, fswake.Channels{Root: root})
	}
	// The watcher's limits, for a delegation made from the run (collab
	// delegate carries them over to the agent it starts).
	cfg.Env = append(cfg.Env, envMaxHops+"="+strconv.Itoa(cmp.Or(s.MaxHops, watcher.DefaultMaxHops)))
	if s.BudgetUSD > 0 {
		cfg.Env = append(cfg.Env, envBudgetUSD+"="+strconv.FormatFloat(s.BudgetUSD, 'f', -1, 64))
	}
	if s.BudgetTokens > 0 {
		cfg.Env = append(cfg.Env, envBudgetTokens+"="+strconv.FormatInt(s.BudgetTokens, 10))
	}
	// The run's COLLAB_KEY is its own agent's key, the one this watcher
	// signs with, or none: never one inherited from whoever started the
	// watcher (a person's, or a team's first agent's, under collab run).
	runKey := ""
	if signer != nil {
		runKey = cmp.Or(s.Key, signing.DefaultKeyPath(s.Agent, getenv))
	}
	cfg.Env = append(cfg.Env, envKey+"="+runKey)
	// collab on the CLI's PATH, so the agent can `collab send`, `collab who`.
	if exe, err := os.Executable(); err == nil && filepath.Base(exe) == "collab" {
		path := filepath.Dir(exe)
		if p := getenv("PATH"); p != "" {
			path += string(os.PathListSeparator) + p
		}
		cfg.Env = append(cfg.Env, "PATH="+path)
	}
	p := &preparedWatch{}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	logger, closeLog, err := watchLogger(root, s.Agent, level, stderr)
	if err != nil {
		return nil, err
	}
	p.closes = append(p.closes, closeLog)
	cfg.Logger = logger
	if o, ok := nf.options(getenv, natsbus.ConnName(s.Agent, hostname()), logger); ok {
		// Unreachable at start: keep trying in the background (files
		// deliver meanwhile); bad credentials stop the watcher now.
		o.KeepTrying = true
		bus, err := natsbus.Connect(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		p.closes = append(p.closes, func() { bus.Drain() })
		announce := make(chan channel.Message, 256)
		cfg.Announce = announce
		cfg.Publisher = bus
		cfg.Wakers = append(cfg.Wakers, natsbus.Waker{Bus: bus, OnMessage: func(m channel.Message) {
			select {
			case announce <- m:
			default: // full: the wake-up and the poll find it anyway
			}
		}})
		// collab jobs kill: look at the kill file now, not at the next poll.
		kills := make(chan string, 1)
		ksub, err := bus.SubscribeKills(s.Agent, func(job string) {
			select {
			case kills <- job:
			default: // one pending is enough: the watcher checks the file
			}
		})
		if err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		p.closes = append(p.closes, func() { ksub.Stop() })
		cfg.Kills = kills
	}
	p.Config = cfg
	return p, nil
}

// envTrust is the variable of --trust.
const envTrust = "COLLAB_TRUST"

// envPrices is the variable of --prices.
const envPrices = "COLLAB_PRICES"

// checkedKeyring opens the keyring that dir names (else the tree's) for a
// long-running command (watch, serve, bridge) and checks it
// (keyring.Ring.Check), after which the ring holds the folder it checked:
// under trust known or signed, one that others than its admin could
// rewrite is refused (exit 2) unless it is empty, which gets a warning
// (it trusts nobody, so it grants nothing); under any, only a warning.
func checkedKeyring(cmd string, root tree.Root, dir string, policy signing.Policy, allowWritable bool, stderr io.Writer) (*keyring.Ring, error) {
	ring := openKeyring(root, dir)
	err := ring.Check(keyring.Owner(string(root)), allowWritable)
	if err == nil {
		return ring, nil
	}
	if policy == signing.Any || ring.Empty() {
		fmt.Fprintf(stderr, "collab: warning: %v\n", err)
		return ring, nil
	}
	hint := "; on a single-account setup pass --allow-writable-keyring"
	if cmd != "watch" {
		hint = ""
	}
	return nil, usageErrorf("%s: refusing the keyring %s (%s; --trust %s): %v\n"+
		"The keyring says whose signatures are trusted, so only root or the tree's owner may write it, "+
		"and only they may move it: as that admin, chown it, chmod go-w its folder and files, and run 'collab init --group GROUP' again "+
		"(it makes the tree's root sticky)%s.",
		cmd, ring.Dir(), describeOwner(ring.Dir()), policy, err, hint)
}

// describeOwner says who owns path and its mode.
func describeOwner(path string) string {
	fi, err := os.Lstat(path)
	if err != nil {
		return err.Error()
	}
	owner := "owner unknown"
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		owner = fmt.Sprintf("owned by uid %d", st.Uid)
	}
	return fmt.Sprintf("%s, mode %v", owner, fi.Mode())
}

// newRunner builds the CLI adapter. For claude, codex and gemini, --cmd
// may name the program (and leading arguments) to run instead of the one
// on PATH. The claude and codex adapters give the CLI the mcp servers.
func newRunner(cli, cmdline, model string, extra []string, mcp []modelcli.MCPServer, getenv env) (watcher.Runner, error) {
	var argv []string
	if cmdline != "" {
		var err error
		if argv, err = modelcli.SplitCommand(cmdline, getenv); err != nil {
			return nil, usageErrorf("watch: --cmd: %v", err)
		}
	}
	bin := func() string {
		if len(argv) > 0 {
			return argv[0]
		}
		return ""
	}
	args := func() []string {
		if len(argv) > 1 {
			return append(argv[1:len(argv):len(argv)], extra...)
		}
		return extra
	}
	switch cli {
	case "command":
		if len(argv) == 0 {
			return nil, usageErrorf("watch: --cli command needs --cmd 'PROGRAM ARGS…'")
		}
		if model != "" {
			return nil, usageErrorf("watch: --model needs a dedicated --cli (claude, codex, gemini); put the model in --cmd")
		}
		return &modelcli.Command{Argv: argv, Args: extra}, nil
	case "claude":
		return &claude.Adapter{Bin: bin(), Model: model, Args: args(), MCPServers: mcp}, nil
	case "codex":
		return &codex.Adapter{Bin: bin(), Model: model, Args: args(), MCPServers: mcp}, nil
	case "gemini":
		return &gemini.Adapter{Bin: bin(), Model: model, Args: args()}, nil
	default:
		return nil, usageErrorf("watch: unknown --cli %q; use claude, codex, gemini or command", cli)
	}
}

// runnerProgram is the program the adapter runs: --cmd's first word, or
// the CLI's own name.
func runnerProgram(r watcher.Runner) string {
	first := func(bin, def string) string { return cmp.Or(bin, def) }
	switch r := r.(type) {
	case *modelcli.Command:
		return r.Argv[0]
	case *claude.Adapter:
		return first(r.Bin, "claude")
	case *codex.Adapter:
		return first(r.Bin, "codex")
	case *gemini.Adapter:
		return first(r.Bin, "gemini")
	}
	return ""
}

// checkRunnable refuses, at start, a --workdir that is not a directory and
// a program that cannot be found, rather than failing every message. A
// relative program with a slash is looked for in the workdir, where it
// runs.
func checkRunnable(program, workdir string) error {
	if workdir != "" {
		fi, err := os.Stat(workdir)
		if err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
		if err != nil {
			return usageErrorf("watch: --workdir %s: %v", workdir, err)
		}
	}
	if program == "" {
		return nil
	}
	path := program
	if strings.Contains(path, "/") && !filepath.IsAbs(path) && workdir != "" {
		path = filepath.Join(workdir, path)
	}
	if _, err := exec.LookPath(path); err != nil {
		return usageErrorf("watch: program %q (the CLI, or --cmd) cannot be run: %v", program, err)
	}
	return nil
}

// roleText reads --role: a file if one exists by that name, else the text.
func roleText(role string) (string, error) {
	if role == "" || strings.ContainsAny(role, "\n") {
		return role, nil
	}
	data, err := os.ReadFile(role)
	if err == nil {
		return string(data), nil
	}
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENAMETOOLONG) {
		return role, nil
	}
	return "", fmt.Errorf("watch: --role %s: %w", role, err)
}

// parseReplay reads --replay-since: a duration ago, or after a message id.
func parseReplay(s string, now time.Time) (*watcher.Replay, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return &watcher.Replay{From: now.Add(-d)}, nil
	}
	n, err := channel.ParseID(s)
	if err != nil {
		return nil, usageErrorf("watch: --replay-since %q is neither a duration (30m) nor a message id", s)
	}
	return &watcher.Replay{From: n.Time, After: s}, nil
}

// watchLogger logs text to stderr and JSON lines to ROOT/logs/AGENT.log,
// rotated by size (see [logMaxBytes]).
func watchLogger(root tree.Root, agent string, level slog.Level, stderr io.Writer) (*slog.Logger, func(), error) {
	// No link is followed to the folder, nor at the file: a log folder or
	// name planted as a symlink cannot aim our appends elsewhere.
	logs, err := safedir.Create(root.Logs())
	if err != nil {
		return nil, nil, fmt.Errorf("watch: log folder: %w", err)
	}
	f, err := openRotatingLog(logs, agent+".log", logMaxBytes, logBackups)
	if err != nil {
		logs.Close()
		return nil, nil, fmt.Errorf("watch: log file %s: %w", root.Logs(), err)
	}
	opts := &slog.HandlerOptions{Level: level}
	h := slog.NewMultiHandler(slog.NewTextHandler(stderr, opts), slog.NewJSONHandler(f, opts))
	return slog.New(h).With(keyAgent, agent), func() { f.Close() }, nil
}
