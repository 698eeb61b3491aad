// Package watchconf is one agent's watcher settings as a person gives
// them, and their one validator: watchsetup checks every watcher's
// settings with [Settings.Check] (collab watch's flags, a workflow
// agent's keys), and the workflow file loader uses its lists ([CLIs],
// [SessionScopes]) and rules ([NeedsCmd]). watchsetup turns the settings
// into a watcher.Config.
//
// The messages name the flags of collab watch (--session-scope, --poll):
// an agent's key of the same name (session_scope) sets the same thing.
// Every error of Check carries errkind.Invalid.
package watchconf

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Session scopes: which messages share one CLI session.
const (
	ScopeChannel = "channel" // one session per channel
	ScopeThread  = "thread"  // one session per thread
	ScopeNone    = "none"    // a fresh session every time
)

// SessionScopes are the scopes a setting may name ("" is the default).
var SessionScopes = []string{ScopeChannel, ScopeThread, ScopeNone}

// CLIs are the model CLI adapters; DefaultCLI is the one of an agent
// given none.
var CLIs = []string{"claude", "codex", "gemini", "command"}

// DefaultCLI is the adapter of a watcher given none.
const DefaultCLI = "command"

// MCPCLIs are the adapters that give the model MCP servers (--mcp).
var MCPCLIs = []string{"claude", "codex"}

// DefaultLogLevel is the level of a watcher's log given none.
const DefaultLogLevel = "info"

// The least a watcher accepts: a shorter poll burns a core scanning, a
// shorter heartbeat rewrites presence nonstop.
const (
	MinPoll      = 10 * time.Millisecond
	MinHeartbeat = time.Second
)

// Settings are the settings of one agent's watcher that have rules:
// collab watch's flags, a workflow agent's keys. A zero field is the
// default, except Poll and Heartbeat, which are required (no agent key
// sets them: the workflow commands pass their own).
type Settings struct {
	Agent        string
	Channels     []string
	CLI, Cmd     string // "" CLI: DefaultCLI
	Model        string
	MCP          bool
	SessionScope string
	BudgetUSD    float64
	BudgetTokens int64
	MaxTurns     int
	Poll         time.Duration
	Heartbeat    time.Duration
	Trust        string // "": signing.DefaultPolicy
	LogLevel     string // "": DefaultLogLevel
	// Live keeps one CLI process per session key (collab watch --live);
	// LiveIdle (0: DefaultLiveIdle) stops one unused that long, LiveMax
	// (0: DefaultLiveMax) caps how many are open.
	Live     bool
	LiveIdle time.Duration
	LiveMax  int
}

// LiveCLIs are the adapters --live runs.
var LiveCLIs = []string{"claude", "codex", "gemini"}

// Defaults of --live-idle and --live-max.
const (
	DefaultLiveIdle = 5 * time.Minute
	DefaultLiveMax  = 4
)

// Check returns the first setting that breaks a rule, as an
// errkind.Invalid error; nil when all are well.
func (s Settings) Check() error {
	for _, check := range []func() error{s.checkNames, s.checkLimits, s.checkCLI, s.checkLive} {
		if err := check(); err != nil {
			return errkind.Wrap(errkind.Invalid, err)
		}
	}
	return nil
}

// checkNames checks the agent and its channels.
func (s Settings) checkNames() error {
	if err := tree.CheckName("agent", s.Agent); err != nil {
		return fmt.Errorf("%v (use --agent or set COLLAB_AGENT; it names the agent served, never taken from the login name)", err)
	}
	if len(s.Channels) == 0 {
		return fmt.Errorf("no channel: use --channel or COLLAB_CHANNEL")
	}
	for _, ch := range s.Channels {
		if err := tree.CheckName("channel", ch); err != nil {
			return err
		}
	}
	return nil
}

// checkLimits checks the settings with a range or a choice.
func (s Settings) checkLimits() error {
	switch {
	case s.SessionScope != "" && !slices.Contains(SessionScopes, s.SessionScope):
		return fmt.Errorf("--session-scope %q: use channel, thread or none", s.SessionScope)
	case s.BudgetUSD < 0:
		return fmt.Errorf("--budget-usd must not be negative")
	case s.BudgetTokens < 0:
		return fmt.Errorf("--budget-tokens must not be negative")
	case s.MaxTurns < 0:
		return fmt.Errorf("--max-turns must not be negative")
	case s.Poll < MinPoll:
		return fmt.Errorf("--poll %v: the minimum is %v", s.Poll, MinPoll)
	case s.Heartbeat < MinHeartbeat:
		return fmt.Errorf("--heartbeat %v: the minimum is %v", s.Heartbeat, MinHeartbeat)
	}
	if _, err := s.Policy(); err != nil {
		return fmt.Errorf("--trust: %v", err)
	}
	if _, err := s.Level(); err != nil {
		return fmt.Errorf("--log-level %q: use debug, info, warn or error", s.LogLevel)
	}
	return nil
}

// checkCLI checks the CLI adapter and what it is given.
func (s Settings) checkCLI() error {
	cli := cmp.Or(s.CLI, DefaultCLI)
	if s.MCP && !slices.Contains(MCPCLIs, cli) {
		return fmt.Errorf("--mcp needs --cli claude or codex, not %s", cli)
	}
	switch {
	case !slices.Contains(CLIs, cli):
		return fmt.Errorf("unknown --cli %q; use claude, codex, gemini or command", cli)
	case NeedsCmd(cli, s.Cmd):
		return fmt.Errorf("--cli command needs --cmd 'PROGRAM ARGS…'")
	case cli == "command" && s.Model != "":
		return fmt.Errorf("--model needs a dedicated --cli (claude, codex, gemini); put the model in --cmd")
	}
	return nil
}

// checkLive checks the live sessions' settings.
func (s Settings) checkLive() error {
	switch cli := cmp.Or(s.CLI, DefaultCLI); {
	case s.LiveIdle < 0:
		return fmt.Errorf("--live-idle must not be negative")
	case s.LiveMax < 0:
		return fmt.Errorf("--live-max must not be negative")
	case !s.Live:
		return nil
	case !slices.Contains(LiveCLIs, cli):
		return fmt.Errorf("--live needs --cli claude, codex or gemini, not %s: a command has no protocol for turns", cli)
	case s.SessionScope == ScopeNone:
		return fmt.Errorf("--live needs --session-scope channel or thread: with none, no two messages share a process")
	}
	return nil
}

// NeedsCmd reports whether cli ("" the default) runs a command line that
// cmd does not give.
func NeedsCmd(cli, cmd string) bool {
	return cmp.Or(cli, DefaultCLI) == "command" && strings.TrimSpace(cmd) == ""
}

// Policy is the trust policy Trust names.
func (s Settings) Policy() (signing.Policy, error) {
	return signing.ParsePolicy(cmp.Or(s.Trust, string(signing.DefaultPolicy)))
}

// Level is the log level LogLevel names.
func (s Settings) Level() (slog.Level, error) {
	var level slog.Level
	err := level.UnmarshalText([]byte(cmp.Or(s.LogLevel, DefaultLogLevel)))
	return level, err
}
