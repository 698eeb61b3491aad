// Package watchsetup assembles one agent's watcher from its settings:
// collab watch's flags, a workflow agent's keys. [Prepare] checks the
// settings (watchconf's rules), the tree, the keyring and the key, the
// price table and the CLI's program, and turns them into a
// watcher.Config with what it holds open: the CLI adapter and its MCP
// servers, the prompt's parts, the run's environment (runenv), the
// rotating log (ROOT/logs/AGENT.log) and, when configured, the NATS
// connection. collab watch runs one ([Run]); the service layer's
// workflow team prepares one per agent.
//
// # Errors
//
// A setting that breaks a rule, a tree or keyring refused, a key, a price
// table, a template or a program that cannot be used are
// errkind.Invalid (collab's exit 2); the rest (a log folder, NATS) carry
// no kind. The messages start with "watch:" and name collab watch's
// flags.
package watchsetup

import (
	"context"
	"io"
	"time"

	"github.com/collabdev/collab/internal/agent/live"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/agent/watchconf"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/watcher"
)

// Settings is every setting of one agent's watcher: the flags of collab
// watch, and the keys of a workflow's agent. A zero field takes the same
// default as the flag left out (the watcher package's Default constants,
// through watcher.Config's zero values), except where noted. Poll and
// Heartbeat are the exceptions: no agent key sets them, and below the
// minimum (0 included) they are refused, so the workflow commands pass
// their own --poll and --heartbeat. The rules they must keep are
// watchconf.Settings.Check's ([Settings.Conf]).
type Settings struct {
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
	QuestionTimeout      time.Duration // a live turn's question waits this long for its answer
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
	Live                 bool             // one warm CLI process per session key (watchconf.Settings.Live)
	LiveIdle             time.Duration    // 0: watchconf.DefaultLiveIdle
	LiveMax              int              // 0: watchconf.DefaultLiveMax
	NATS                 *natsbus.Options // nil or no URL: no NATS
	MCPArgs              []string         // more arguments of --mcp's collab mcp (watch --remote's)
	// RemoteState, when set, is watch --remote's state directory: the
	// model's collab commands go through the bridge with it.
	RemoteState string

	// BounceEvery and BounceGrace tune the sweep for delivery reports
	// (watcher.Config's; 0: the defaults, BounceEvery <0: no sweep).
	BounceEvery, BounceGrace time.Duration
}

// Host is what a watcher takes from the process that runs it.
type Host struct {
	// Getenv reads the defaults of the environment (the key's folder,
	// PATH, the NATS secrets); nil reads nothing.
	Getenv func(string) string
	// Stderr takes the log's text and the warnings; nil: dropped.
	Stderr io.Writer
	// Hurry, if set, is called once the watcher is configured: it takes
	// the channel closed on a second signal (watcher.Config.Hurry).
	Hurry func() <-chan struct{}
	// Said, if set, makes the notices that concern the whole tree (no
	// signing keys yet) said once for every watcher prepared with it.
	Said *Said
}

func (h Host) getenv(k string) string {
	if h.Getenv == nil {
		return ""
	}
	return h.Getenv(k)
}

func (h Host) stderr() io.Writer {
	if h.Stderr == nil {
		return io.Discard
	}
	return h.Stderr
}

// Conf is what of s the one validator checks.
func (s *Settings) Conf() watchconf.Settings {
	return watchconf.Settings{
		Agent: s.Agent, Channels: s.Channels,
		CLI: s.CLI, Cmd: s.Cmd, Model: s.Model, MCP: s.MCP,
		SessionScope: s.SessionScope, BudgetUSD: s.BudgetUSD, BudgetTokens: s.BudgetTokens, MaxTurns: s.MaxTurns,
		Poll: s.Poll, Heartbeat: s.Heartbeat, Trust: s.Trust, LogLevel: s.LogLevel,
		Live: s.Live, LiveIdle: s.LiveIdle, LiveMax: s.LiveMax,
	}
}

// Watch is a watcher's configuration and what it holds open (its log
// file, its NATS connection) until Close.
type Watch struct {
	Config watcher.Config
	closes []func()
}

// Close releases what Prepare opened, last first.
func (w *Watch) Close() {
	for i := len(w.closes) - 1; i >= 0; i-- {
		w.closes[i]()
	}
	w.closes = nil
}

// startLive gives cfg the pool of live sessions (--live), closed with w:
// its processes are stopped when the watcher has ended.
func (w *Watch) startLive(cfg *watcher.Config, s Settings) {
	if !s.Live {
		return
	}
	var start live.Starter
	switch a := cfg.Runner.(type) { // the CLIs watchconf lets --live run
	case *claude.Adapter:
		start = &live.Claude{Adapter: a}
	case *codex.Adapter:
		start = &live.Codex{Adapter: a}
	case *gemini.Adapter:
		start = &live.Gemini{Adapter: a}
	default:
		return
	}
	pool := live.NewPool(start, live.Config{Idle: s.LiveIdle, Max: s.LiveMax, Logger: cfg.Logger,
		Sticky: []string{runenv.Hops}})
	w.closes = append(w.closes, pool.Close)
	cfg.Live = pool
}

// Run prepares the watcher of s on the tree at root and runs it until
// ctx ends: collab watch.
func Run(ctx context.Context, root tree.Root, s Settings, h Host) error {
	w, err := Prepare(ctx, root, s, h)
	if err != nil {
		return err
	}
	defer w.Close()
	return watcher.Run(ctx, w.Config)
}

// Prepare checks s (watchconf's rules, then the tree, the keyring and
// the key, the price table, the CLI's program) and turns it into a
// watcher.Config with its side things: the MCP wiring, the CLI adapter,
// the logger (h.Stderr and ROOT/logs/AGENT.log) and, when configured,
// the NATS connection.
func Prepare(ctx context.Context, root tree.Root, s Settings, h Host) (_ *Watch, err error) {
	if err := checkTree(root, s, h.stderr()); err != nil {
		return nil, err
	}
	conf := s.Conf()
	if err := conf.Check(); err != nil {
		return nil, invalid("watch: %v", err)
	}
	policy, _ := conf.Policy()
	level, _ := conf.Level()
	cfg, err := config(root, s, policy, h)
	if err != nil {
		return nil, err
	}
	w := &Watch{}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	logger, closeLog, err := Logger(root, s.Agent, level, h.stderr())
	if err != nil {
		return nil, err
	}
	w.closes = append(w.closes, closeLog)
	cfg.Logger = logger
	if err := w.connectNATS(ctx, &cfg, s); err != nil {
		return nil, err
	}
	w.startLive(&cfg, s)
	w.Config = cfg
	return w, nil
}
