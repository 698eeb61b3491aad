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
	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/agent/watchconf"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/watcher"
	"github.com/spf13/pflag"
)

func runWatch(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("watch", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, watchUsage)
		fs.PrintDefaults()
	}
	var s watchSettings
	wf := addWatchFlags(fs, &s)
	nf := addNATSFlags(fs)
	rootf := rootFlag(fs)
	rf := addRemoteFlags(fs)
	if err := parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("watch: unexpected argument %q", fs.Arg(0))
	}
	s.Agent, s.Key, s.Keyring, s.NATS = *wf.agent, *wf.key, *wf.keyring, nf
	s.Context = *wf.context
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

const watchUsage = `Usage: collab watch --agent A --channel C [--channel C2 …] --cli command --cmd 'PROGRAM ARGS…' [flags]

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
`

// watchFlagValues are the flags of collab watch that do not go straight
// into the settings.
type watchFlagValues struct {
	agent, key, keyring *string
	context             *int
}

// addWatchFlags adds the watcher's flags to fs, bound to s.
func addWatchFlags(fs *pflag.FlagSet, s *watchSettings) watchFlagValues {
	var v watchFlagValues
	v.agent = agentFlag(fs, "", "agent ID", false)
	fs.StringArrayVar(&s.Channels, "channel", nil, "channel to watch, repeatable; in the variable, comma-separated")
	fromEnv(fs, "channel", envChannel)
	addCLIFlags(fs, s)
	fs.Float64Var(&s.BudgetUSD, "budget-usd", 0, "stop running the CLI for the rest of the UTC day once its runs cost this much (0: no limit); codex's and gemini's tokens are priced from --prices")
	fs.Int64Var(&s.BudgetTokens, "budget-tokens", 0, "stop running the CLI for the rest of the UTC day once its runs used this many tokens, input and output (0: no limit)")
	fs.StringVar(&s.Prices, "prices", "", "JSON price table whose models replace or add to the shipped prices, in USD per million tokens (see README)")
	fromEnv(fs, "prices", envPrices)
	fs.IntVar(&s.MaxTurns, "max-turns", 0, "stop a CLI run after this many turns, a failure (claude: its --max-turns; others: counted by the watcher) (0: no limit)")
	fs.StringVar(&s.Role, "role", "", "the agent's role: a file to read, or the text itself")
	fs.StringArrayVar(&s.Memory, "memory", nil, "file read fresh into every prompt, repeatable (e.g. CURRENT-STATE.md)")
	v.context = fs.Int("context", watcher.DefaultContext, "recent messages in the prompt's transcript (0: none)")
	fs.StringVar(&s.PromptTemplate, "prompt-template", "", "Go text/template file that replaces the built-in prompt")
	fs.StringVar(&s.Workdir, "workdir", "", "working directory of the CLI")
	fromEnv(fs, "workdir", "COLLAB_WORKDIR")
	fs.DurationVar(&s.Timeout, "timeout", watcher.DefaultTimeout, "longest CLI run; then its process group is killed")
	fs.BoolVar(&s.PostErrors, "post-errors", false, "post a short error reply when the CLI fails")
	addLoopFlags(fs, s)
	fs.StringVar(&s.Trust, "trust", string(signing.DefaultPolicy), "which senders to act on: any, known (a sender with a trusted key must verify) or signed (verified senders only)")
	fromEnv(fs, "trust", envTrust)
	v.key = keyFlag(fs)
	v.keyring = keyringFlag(fs)
	fs.BoolVar(&s.AllowWritableKeyring, "allow-writable-keyring", false, "accept a keyring this account can write (a single-account setup)")
	fs.BoolVar(&s.MCP, "mcp", false, "give the model the bus as MCP tools mid-task (collab mcp as this agent, on the message's channel); claude and codex")
	return v
}

// addCLIFlags adds the flags of the model CLI and its sessions.
func addCLIFlags(fs *pflag.FlagSet, s *watchSettings) {
	fs.StringVar(&s.CLI, "cli", defaultCLI, "CLI adapter: claude, codex, gemini or command")
	fromEnv(fs, "cli", "COLLAB_CLI")
	fs.StringVar(&s.Cmd, "cmd", "", "command line of the CLI, split like shell words but run without a shell")
	fromEnv(fs, "cmd", "COLLAB_CMD")
	fs.StringArrayVar(&s.CLIArgs, "cli-arg", nil, "extra argument for the CLI, repeatable; each value is exactly one argument")
	fs.StringVar(&s.Model, "model", "", "model for the CLI")
	fromEnv(fs, "model", "COLLAB_MODEL")
	fs.StringVar(&s.SessionScope, "session-scope", watcher.DefaultSessionScope, "which messages resume one CLI session: channel, thread or none")
	fs.DurationVar(&s.SessionTTL, "session-ttl", watcher.DefaultSessionTTL, "how long an unused CLI session is resumed")
}

// addLoopFlags adds the flags of the watcher's loop: its timing, its
// guards, its start and its log.
func addLoopFlags(fs *pflag.FlagSet, s *watchSettings) {
	fs.DurationVar(&s.Poll, "poll", watcher.DefaultPoll, "poll interval (polling is the truth on NFS), at least "+watcher.MinPoll.String())
	fs.DurationVar(&s.Heartbeat, "heartbeat", watcher.DefaultHeartbeat, "presence heartbeat interval, at least "+watcher.MinHeartbeat.String())
	fs.DurationVar(&s.Grace, "grace", runenv.Grace, "on shutdown, how long a running CLI may finish")
	fs.DurationVar(&s.ClaimGrace, "claim-grace", watcher.DefaultClaimGrace, "how stale another watcher's claim must be before taking it over")
	fs.IntVar(&s.MaxHops, "max-hops", watcher.DefaultMaxHops, "do not answer messages this deep in a reply chain (0: default, <0: off)")
	fs.IntVar(&s.Rate, "rate", watcher.DefaultRate, "CLI runs per minute at most; more messages wait (<0: off)")
	fs.IntVar(&s.PairRate, "pair-rate", watcher.DefaultPairRate, "replies per minute to one sender in agent chains (<0: off)")
	fs.StringVar(&s.Replay, "replay-since", "", "on start, also answer history: since a DURATION ago or after message ID")
	fs.BoolVar(&s.NoNotify, "no-fsnotify", false, "poll only; do not use inotify to wake early")
	fs.StringVar(&s.LogLevel, "log-level", defaultLogLevel, "debug, info, warn or error")
	fs.DurationVar(&s.RecoveryWindow, "recovery-window", watcher.DefaultRecoveryWindow, "when the state file is corrupt, answer what has no reply from this far back")
	fs.BoolVar(&s.AllowWorld, "allow-world-writable", false, "run even though a folder of the tree is world-writable without the sticky bit")
}

// defaultCLI is the adapter of a watcher given none (--cli, a workflow
// agent's cli).
const defaultCLI = watchconf.DefaultCLI

// defaultLogLevel is the level of a watcher's log given none.
const defaultLogLevel = watchconf.DefaultLogLevel

// watchSettings is every setting of one agent's watcher: the flags of
// collab watch, and the keys of a workflow's agent. A zero field takes the
// same default as the flag left out (the watcher package's Default
// constants, through watcher.Config's zero values), except where noted.
// Poll and Heartbeat are the exceptions: no agent key sets them, and
// below the minimum (0 included) they are refused, so the workflow
// commands pass their own --poll and --heartbeat. The rules they must
// keep are watchconf.Settings.Check's ([watchSettings.conf]).
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
	// RemoteState, when set, is watch --remote's state directory: the
	// model's collab commands go through the bridge with it.
	RemoteState string
}

// conf is what of s the one validator checks.
func (s *watchSettings) conf() watchconf.Settings {
	return watchconf.Settings{
		Agent: s.Agent, Channels: s.Channels,
		CLI: s.CLI, Cmd: s.Cmd, Model: s.Model, MCP: s.MCP,
		SessionScope: s.SessionScope, BudgetUSD: s.BudgetUSD, BudgetTokens: s.BudgetTokens, MaxTurns: s.MaxTurns,
		Poll: s.Poll, Heartbeat: s.Heartbeat, Trust: s.Trust, LogLevel: s.LogLevel,
	}
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

// prepareWatch checks s (watchconf's rules, then the tree, the keyring
// and the key, the price table, the CLI's program) and turns it into a
// watcher.Config with its side things: the MCP wiring, the CLI adapter,
// the logger (stderr and ROOT/logs/AGENT.log) and, when configured, the
// NATS connection. collab watch and the workflow commands both call it;
// errors are those of collab watch (usage: 2).
func prepareWatch(ctx context.Context, root tree.Root, s watchSettings, getenv env, stderr io.Writer) (_ *preparedWatch, err error) {
	if err := checkWatchTree(root, s, stderr); err != nil {
		return nil, err
	}
	conf := s.conf()
	if err := conf.Check(); err != nil {
		return nil, usageErrorf("watch: %v", err)
	}
	policy, _ := conf.Policy()
	level, _ := conf.Level()
	cfg, err := watchConfig(ctx, root, s, policy, getenv, stderr)
	if err != nil {
		return nil, err
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
	if err := p.connectNATS(ctx, &cfg, s, getenv); err != nil {
		return nil, err
	}
	p.Config = cfg
	return p, nil
}

// checkWatchTree refuses a tree whose folders others could rewrite
// (unless --allow-world-writable), and warns of channel folders without
// the sticky bit.
func checkWatchTree(root tree.Root, s watchSettings, stderr io.Writer) error {
	if err := root.CheckShared(); err != nil && !errors.Is(err, os.ErrNotExist) {
		if !errors.Is(err, tree.ErrWorldWritable) {
			return fmt.Errorf("watch: %w", err) // no flag allows it
		}
		if !s.AllowWorld {
			return fmt.Errorf("watch: %w (or pass --allow-world-writable)", err)
		}
	}
	if dirs := root.Unsticky(s.Channels...); len(dirs) > 0 {
		fmt.Fprintf(stderr, "collab: warning: %s writable by the tree's group without the sticky bit, so any member can rename or remove another's files there: run 'collab init --group GROUP' again as the tree's owner (chmod +t for a channel's folder)\n",
			strings.Join(dirs, ", ")+map[bool]string{true: " is", false: " are"}[len(dirs) == 1])
	}
	return nil
}

// watchConfig is the watcher.Config of settings s that passed their
// check: the keyring, the key, the CLI adapter, the prompt's parts, the
// wakers and the run's environment.
func watchConfig(ctx context.Context, root tree.Root, s watchSettings, policy signing.Policy, getenv env, stderr io.Writer) (watcher.Config, error) {
	prices, err := pricing.Load(s.Prices)
	if err != nil {
		return watcher.Config{}, usageErrorf("watch: --prices: %v", err)
	}
	ring, signer, err := watchIdentity(root, s, policy, getenv, stderr)
	if err != nil {
		return watcher.Config{}, err
	}
	cfg := watcher.Config{
		Root: root, RecoveryWindow: s.RecoveryWindow,
		Agent: s.Agent, Aliases: s.Aliases, Channels: s.Channels,
		CLI: cmp.Or(s.CLI, defaultCLI), SessionScope: s.SessionScope, SessionTTL: s.SessionTTL,
		BudgetUSD: s.BudgetUSD, BudgetTokens: s.BudgetTokens, Prices: prices,
		Memory: s.Memory, Context: s.Context, Workdir: s.Workdir, Timeout: s.Timeout, PostErrors: s.PostErrors,
		Poll: s.Poll, Heartbeat: s.Heartbeat, Grace: s.Grace, ClaimGrace: s.ClaimGrace,
		MaxHops: s.MaxHops, Rate: s.Rate, PairRate: s.PairRate,
		Hurry:  takeHurry(ctx),
		Signer: signer, Verifier: signing.NewVerifier(ring), Trust: policy,
	}
	if cfg.Runner, err = watchRunner(root, s, getenv); err != nil {
		return watcher.Config{}, err
	}
	if c, ok := cfg.Runner.(*claude.Adapter); ok {
		c.MaxTurns = s.MaxTurns // Claude Code stops itself
	} else {
		cfg.MaxTurns = s.MaxTurns
	}
	if err := watchPrompt(&cfg, s); err != nil {
		return watcher.Config{}, err
	}
	if !s.NoNotify {
		cfg.Wakers = append(cfg.Wakers, fswake.Channels{Root: root})
	}
	cfg.Env = watchRunEnv(s, signer != nil, getenv).Env()
	return cfg, nil
}

// watchIdentity opens and checks the keyring and loads the agent's key:
// an agent with keys in the ring must sign (unless trust is any).
func watchIdentity(root tree.Root, s watchSettings, policy signing.Policy, getenv env, stderr io.Writer) (*keyring.Ring, *signing.Signer, error) {
	ring, err := checkedKeyring("watch", root, s.Keyring, policy, s.AllowWritableKeyring, stderr)
	if err != nil {
		return nil, nil, err
	}
	signer, err := loadSigner(s.Key, s.Agent, getenv)
	if err != nil {
		return nil, nil, usageErrorf("watch: %v", err)
	}
	if signer == nil && policy != signing.Any && ring.HasKeys(s.Agent) {
		// Its own claims, heartbeats and replies would be unsigned in the
		// name of an agent with keys: forgeries to every other watcher.
		return nil, nil, usageErrorf("watch: %s has keys in the keyring %s but this watcher has no private key (looked in %s): give it its key with --key or %s, or run with --trust any",
			s.Agent, ring.Dir(), cmp.Or(s.Key, signing.DefaultKeyPath(s.Agent, getenv)), envKey)
	}
	return ring, signer, nil
}

// watchRunner is the CLI adapter of s, with its MCP servers (--mcp),
// once its program is found.
func watchRunner(root tree.Root, s watchSettings, getenv env) (watcher.Runner, error) {
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
	return runner, nil
}

// watchPrompt sets the prompt's parts of cfg: the role, the template, and
// the history to answer on start.
func watchPrompt(cfg *watcher.Config, s watchSettings) (err error) {
	if cfg.Role, err = roleText(s.Role); err != nil {
		return err
	}
	if s.PromptTemplate != "" {
		if cfg.Template, err = prompt.Load(s.PromptTemplate); err != nil {
			return usageErrorf("watch: %v", err)
		}
	}
	if s.Replay != "" {
		if cfg.Replay, err = parseReplay(s.Replay, time.Now()); err != nil {
			return err
		}
	}
	return nil
}

// watchRunEnv is the watcher's part of each run's environment: its
// limits, for a delegation made from the run (collab delegate carries
// them over to the agent it starts); its key; collab on the PATH; and,
// under watch --remote, the bridge.
func watchRunEnv(s watchSettings, signs bool, getenv env) runenv.Watcher {
	w := runenv.Watcher{
		MaxHops: cmp.Or(s.MaxHops, watcher.DefaultMaxHops), BudgetUSD: s.BudgetUSD, BudgetTokens: s.BudgetTokens,
		StateDir: s.RemoteState,
	}
	// The run's COLLAB_KEY is its own agent's key, the one this watcher
	// signs with, or none: never one inherited from whoever started the
	// watcher (a person's, or a team's first agent's, under collab run).
	if signs {
		w.Key = cmp.Or(s.Key, signing.DefaultKeyPath(s.Agent, getenv))
	}
	// collab on the CLI's PATH, so the agent can `collab send`, `collab who`.
	if exe, err := os.Executable(); err == nil && filepath.Base(exe) == "collab" {
		w.Path = filepath.Dir(exe)
		if p := getenv("PATH"); p != "" {
			w.Path += string(os.PathListSeparator) + p
		}
	}
	return w
}

// connectNATS connects to NATS when s has a server: the watcher publishes
// what it writes, is woken by what others publish, and hears collab jobs
// kill at once. The connection is closed (drained) by p.Close.
func (p *preparedWatch) connectNATS(ctx context.Context, cfg *watcher.Config, s watchSettings, getenv env) error {
	nf := s.NATS
	if nf == nil {
		return nil
	}
	o, ok := nf.options(getenv, natsbus.ConnName(s.Agent, hostname()), cfg.Logger)
	if !ok {
		return nil
	}
	// Unreachable at start: keep trying in the background (files
	// deliver meanwhile); bad credentials stop the watcher now.
	o.KeepTrying = true
	bus, err := natsbus.Connect(ctx, o)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
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
		return fmt.Errorf("watch: %w", err)
	}
	p.closes = append(p.closes, func() { ksub.Stop() })
	cfg.Kills = kills
	return nil
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

// newRunner builds the CLI adapter of settings that passed
// watchconf's check. For claude, codex and gemini, --cmd
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
		if len(argv) == 0 { // --cmd's words expanded to none
			return nil, usageErrorf("watch: --cli command needs --cmd 'PROGRAM ARGS…'")
		}
		return &modelcli.Command{Argv: argv, Args: extra}, nil
	case "claude":
		return &claude.Adapter{Bin: bin(), Model: model, Args: args(), MCPServers: mcp}, nil
	case "codex":
		return &codex.Adapter{Bin: bin(), Model: model, Args: args(), MCPServers: mcp}, nil
	case "gemini":
		return &gemini.Adapter{Bin: bin(), Model: model, Args: args()}, nil
	default:
		return nil, fmt.Errorf("watch: no adapter for --cli %q", cli) // watchconf refuses it first
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
