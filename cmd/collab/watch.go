package main

import (
	"context"
	"io"

	"github.com/spf13/pflag"

	"github.com/collabdev/collab/internal/agent/remotewatch"
	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/agent/watchconf"
	"github.com/collabdev/collab/internal/agent/watchsetup"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/envflag"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/watcher"
)

// watchSettings is every setting of one agent's watcher (package
// watchsetup assembles it).
type watchSettings = watchsetup.Settings

func runWatch(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("watch", helpText("watch"), stderr)
	var s watchSettings
	wf := addWatchFlags(fs, &s)
	wf.add(withNATS, withRoot, withRemote)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	s.Agent, s.Key, s.Keyring, s.NATS = *wf.agent, *wf.key, *wf.ring, wf.nf.conn(getenv)
	s.Context = *wf.context
	if s.Context == 0 {
		s.Context = -1 // the flag's 0 is none; the settings' 0 is the default
	}
	h := watchHost(ctx, getenv, stderr)
	if wf.remote() {
		return remotewatch.Run(ctx, remotewatch.Request{Settings: s, Host: h, State: wf.rf.state, StartMirror: startMirror})
	}
	return watchsetup.Run(ctx, wf.tree(getenv), s, h)
}

// watchHost is what a watcher takes from this process.
func watchHost(ctx context.Context, getenv env, stderr io.Writer) watchsetup.Host {
	return watchsetup.Host{Getenv: getenv, Stderr: stderr, Hurry: func() <-chan struct{} { return takeHurry(ctx) }, Said: new(watchsetup.Said)}
}

// startMirror starts watch --remote's mirror; tests give a stand-in.
var startMirror = remotewatch.StartMirror

// conn is the connection settings of f for a watcher; nil when no server
// is configured.
func (f *natsFlags) conn(getenv env) *natsbus.Options {
	o, ok := f.options(getenv, "", nil)
	if !ok {
		return nil
	}
	return &o
}

// watchFlagValues are the flags of collab watch that do not go straight
// into the settings.
type watchFlagValues struct {
	*common
	context *int
}

// addWatchFlags adds the watcher's flags to fs, bound to s.
func addWatchFlags(fs *pflag.FlagSet, s *watchSettings) watchFlagValues {
	v := watchFlagValues{common: &common{fs: fs, agent: agentFlag(fs, "", "agent ID", false)}}
	fs.StringArrayVar(&s.Channels, "channel", nil, "channel to watch, repeatable; in the variable, comma-separated")
	envflag.FromEnv(fs, "channel", envChannel)
	addCLIFlags(fs, s)
	fs.Float64Var(&s.BudgetUSD, "budget-usd", 0, "stop running the CLI for the rest of the UTC day once its runs cost this much (0: no limit); codex's and gemini's tokens are priced from --prices")
	fs.Int64Var(&s.BudgetTokens, "budget-tokens", 0, "stop running the CLI for the rest of the UTC day once its runs used this many tokens, input and output (0: no limit)")
	fs.StringVar(&s.Prices, "prices", "", "JSON price table whose models replace or add to the shipped prices, in USD per million tokens (see docs/messaging.md, collab watch)")
	envflag.FromEnv(fs, "prices", envPrices)
	fs.IntVar(&s.MaxTurns, "max-turns", 0, "stop a CLI run after this many turns, a failure (claude: its --max-turns; others: counted by the watcher) (0: no limit)")
	fs.StringVar(&s.Role, "role", "", "the agent's role: a file to read, or the text itself")
	fs.StringArrayVar(&s.Memory, "memory", nil, "file read fresh into every prompt, repeatable (e.g. CURRENT-STATE.md)")
	v.context = fs.Int("context", watcher.DefaultContext, "recent messages in the prompt's transcript (0: none)")
	fs.StringVar(&s.PromptTemplate, "prompt-template", "", "Go text/template file that replaces the built-in prompt")
	fs.StringVar(&s.Workdir, "workdir", "", "working directory of the CLI")
	envflag.FromEnv(fs, "workdir", "COLLAB_WORKDIR")
	fs.DurationVar(&s.Timeout, "timeout", watcher.DefaultTimeout, "longest CLI run; then its process group is killed")
	fs.BoolVar(&s.PostErrors, "post-errors", false, "post a short error reply when the CLI fails")
	addLoopFlags(fs, s)
	fs.StringVar(&s.Trust, "trust", string(signing.DefaultPolicy), "which senders to act on: any, known (a sender with a trusted key must verify) or signed (verified senders only)")
	envflag.FromEnv(fs, "trust", envTrust)
	v.add(withKey, withKeyring)
	fs.BoolVar(&s.AllowWritableKeyring, "allow-writable-keyring", false, "accept a keyring this account can write (a single-account setup)")
	fs.BoolVar(&s.MCP, "mcp", false, "give the model the bus as MCP tools mid-task (collab mcp as this agent, on the message's channel); claude and codex")
	return v
}

// addCLIFlags adds the flags of the model CLI and its sessions.
func addCLIFlags(fs *pflag.FlagSet, s *watchSettings) {
	fs.StringVar(&s.CLI, "cli", watchconf.DefaultCLI, "CLI adapter: claude, codex, gemini or command")
	envflag.FromEnv(fs, "cli", "COLLAB_CLI")
	fs.StringVar(&s.Cmd, "cmd", "", "command line of the CLI, split like shell words but run without a shell")
	envflag.FromEnv(fs, "cmd", "COLLAB_CMD")
	fs.StringArrayVar(&s.CLIArgs, "cli-arg", nil, "extra argument for the CLI, repeatable; each value is exactly one argument")
	fs.StringVar(&s.Model, "model", "", "model for the CLI")
	envflag.FromEnv(fs, "model", "COLLAB_MODEL")
	fs.StringVar(&s.SessionScope, "session-scope", watcher.DefaultSessionScope, "which messages resume one CLI session: channel, thread or none")
	fs.DurationVar(&s.SessionTTL, "session-ttl", watcher.DefaultSessionTTL, "how long an unused CLI session is resumed")
	fs.BoolVar(&s.Live, "live", false, "keep one warm CLI process per session (channel or thread) and send it each message as a turn; claude, codex and gemini")
	fs.DurationVar(&s.LiveIdle, "live-idle", watchconf.DefaultLiveIdle, "with --live, stop a process unused this long (its session is resumed on the next message)")
	fs.IntVar(&s.LiveMax, "live-max", watchconf.DefaultLiveMax, "with --live, processes open at most; the least recently used is stopped first")
	fs.DurationVar(&s.QuestionTimeout, "question-timeout", watcher.DefaultQuestionTimeout, "with --live, how long a question asked mid-run waits for its answer; then it is refused")
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

// defaultLogLevel is the level of a watcher's log given none.
const defaultLogLevel = watchconf.DefaultLogLevel

// envTrust is the variable of --trust.
const envTrust = "COLLAB_TRUST"

// envPrices is the variable of --prices.
const envPrices = "COLLAB_PRICES"
