package watcher

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/pricing"
	"github.com/collabdev/collab/internal/agent/prompt"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Config is a watcher's configuration. Zero durations and counts take the
// defaults named in their comments.
type Config struct {
	Root  tree.Root
	Agent string
	// Aliases are other names the agent answers to in its channels (a
	// workflow agent reviewer--pr-123 answers to @reviewer, see
	// channel.Message.IsForAny); it still posts, claims and beats as
	// Agent.
	Aliases  []string
	Channels []string
	Host     string // default os.Hostname()

	Runner Runner
	// Live, when set, runs each message whose session key is not empty
	// (SessionScope channel or thread) as a turn of that key's warm CLI
	// process instead of through Runner (collab watch --live), and a later
	// turn's prompt carries only what is new (see LiveRunner).
	Live     LiveRunner
	CLI      string           // the adapter's name, for job records; default "command"
	Template *prompt.Template // default prompt.Default()
	Role     string
	Memory   []string // files read fresh for every prompt
	Context  int      // messages of transcript; default 10, <0 none
	Workdir  string
	Env      []string      // more KEY=VALUE for the CLI, before docs/protocol.md#the-model-run's
	Timeout  time.Duration // per CLI run; default 10m
	// QuestionTimeout bounds the wait for the answer to a question a live
	// turn asks mid-run (the turn's Timeout stops meanwhile); unanswered,
	// the question is refused. Default 10m.
	QuestionTimeout time.Duration
	PostErrors      bool // post a short error reply when the CLI fails

	Poll       time.Duration // default 1s
	Heartbeat  time.Duration // default 10s
	Grace      time.Duration // shutdown grace for a running CLI; default 30s
	ClaimGrace time.Duration // default claim.DefaultGrace

	MaxHops  int // default 6; <0 disables
	Rate     int // CLI runs per minute; default 20; <0 disables
	PairRate int // replies per minute to one sender in agent chains; default 6; <0 disables

	// Sessions: messages with the same key (see the Scope constants) resume
	// the CLI session of the last run, for up to SessionTTL (default 8h).
	SessionScope string // default ScopeChannel
	SessionTTL   time.Duration
	// BudgetUSD stops invoking the CLI for the rest of the UTC day once the
	// day's runs cost this much; 0: no budget. A run's cost is what the
	// CLI reports (claude) or, when it reports tokens and no cost (codex,
	// gemini), its tokens priced by Prices; a model Prices does not know is
	// warned about once and its runs count as free. A Runner that reports
	// neither cost nor tokens (ReportsCost and ReportsTokens false: the
	// command adapter) never trips it: Run warns at start.
	BudgetUSD float64
	// BudgetTokens stops invoking the CLI for the rest of the UTC day once
	// the day's runs used this many tokens (modelcli.Usage.Tokens: input,
	// cached or not, and output), like BudgetUSD; 0: no budget.
	BudgetTokens int64
	// Prices prices the tokens of runs that report no cost; default
	// pricing.Default().
	Prices *pricing.Table
	// MaxTurns stops a run whose model would start turn MaxTurns+1,
	// counted in its events (see turnLimit), with an error; 0: no limit.
	// Leave it 0 for a Runner that limits turns itself (claude.Adapter's
	// MaxTurns).
	MaxTurns int
	// OrphanAge: temp files older than this, left by writers that crashed
	// mid-write in the folders the watcher writes to (its channels, its
	// claims and reply tokens in ROOT/claims/CHANNEL/AGENT/, its state,
	// outbox and jobs, presence), are removed at start and hourly; default
	// safedir.DefaultOrphanAge (36h), <0 never.
	OrphanAge time.Duration
	// RecoveryWindow is how far back a watcher rescans its channels when
	// its state file is corrupt or unreadable; default
	// DefaultRecoveryWindow. Messages older than that are not answered.
	RecoveryWindow time.Duration
	// Delivery reports (see bounce.go and package delivery): every
	// BounceEvery (default DefaultBounceEvery, <0 never) the watcher
	// sweeps the messages of its channels newer than BounceWindow
	// (default DefaultBounceWindow) and reports to their senders the
	// addressees undeliverable for BounceGrace (default
	// DefaultBounceGrace: time for another host's registry entry or
	// presence file to show through the mount's cache), or unclaimed past
	// their expiry (channel.ExtExpireAfter, else the channel's
	// settings), and a refusal or failure not reported after BounceGrace.
	BounceEvery  time.Duration
	BounceGrace  time.Duration
	BounceWindow time.Duration

	// Signer signs everything the watcher writes as its agent: replies,
	// questions, notices and forgery reports (a reply kept in the outbox
	// is signed when it is posted), heartbeats, claims and reply tokens;
	// nil: unsigned.
	Signer *signing.Signer
	// Verifier checks the signatures of what the watcher would act on
	// (messages addressed to it, permission answers, kill requests,
	// claims; a nil Verifier knows no key), and Trust says which it acts
	// on; default signing.DefaultPolicy. A message refused is logged and
	// reported once in its channel (see the package doc); a forged kill
	// request is ignored and a forged claim taken over, both logged.
	Verifier *signing.Verifier
	Trust    signing.Policy
	// KeysNoticed says the caller has told the user that the tree has
	// no signing keys yet (watchsetup does, once per process): the
	// start's warnings about unsigned messages are then not repeated.
	KeysNoticed bool
	// ClaimDirs opens the agent's claims folders (claim.Store.Dirs): nil,
	// the files under Root; a remote watcher's (collab watch --remote)
	// decides its claims and reply tokens on the mount through a bridge,
	// while everything else it reads and writes is under Root, its local
	// mirror tree. Its seen files (delivery.MarkSeenIn) go there too.
	ClaimDirs claim.Dirs

	Replay *Replay // nil: first start begins now, restarts resume
	Wakers []Waker
	// Announce carries messages announced on a faster path (NATS) before
	// their files may be visible here: the watcher reads those files
	// directly; one that never appears is logged.
	Announce <-chan channel.Message
	// Kills carries the ids of jobs someone asked to stop, announced on a
	// faster path (NATS): the watcher looks at the kill file at once
	// instead of at its next poll. The file is the truth: a request whose
	// file is not there (yet) is not acted on.
	Kills <-chan string
	// Hurry, once closed after ctx is done (a second signal), ends the
	// grace: the running CLI's process group is killed at once (SIGKILL)
	// and Run writes OFFLINE and returns as soon as the run has ended.
	Hurry <-chan struct{}
	// Publisher, if set, also publishes every message and heartbeat the
	// watcher writes.
	Publisher Publisher
	// Telemetry records the watcher's spans (one per message it
	// finishes, see trace.go) and metrics; nil: telemetry.Default().
	Telemetry *telemetry.Telemetry
	Logger    *slog.Logger
	Now       func() time.Time

	// writeMessage, if set, replaces the channel writer (tests inject
	// write errors through it).
	writeMessage func(*channel.Message) error
}

// setDefaults checks c and fills in the defaults of its zero fields.
func (c *Config) setDefaults() error {
	if err := c.check(); err != nil {
		return err
	}
	if c.Host == "" {
		c.Host, _ = os.Hostname()
	}
	if c.CLI == "" {
		c.CLI = "command"
	}
	if c.SessionScope == "" {
		c.SessionScope = DefaultSessionScope
	}
	if c.Template == nil {
		c.Template = prompt.Default()
	}
	if c.Trust == "" {
		c.Trust = signing.DefaultPolicy
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Timeout, DefaultTimeout)
	def(&c.QuestionTimeout, DefaultQuestionTimeout)
	def(&c.Poll, DefaultPoll)
	def(&c.Heartbeat, DefaultHeartbeat)
	def(&c.Grace, DefaultGrace)
	def(&c.ClaimGrace, DefaultClaimGrace)
	def(&c.SessionTTL, DefaultSessionTTL)
	if c.OrphanAge == 0 {
		c.OrphanAge = safedir.DefaultOrphanAge
	}
	def(&c.RecoveryWindow, DefaultRecoveryWindow)
	defInt := func(n *int, v int) {
		if *n == 0 {
			*n = v
		}
	}
	defInt(&c.Context, DefaultContext)
	defInt(&c.MaxHops, DefaultMaxHops)
	defInt(&c.Rate, DefaultRate)
	defInt(&c.PairRate, DefaultPairRate)
	if c.Prices == nil {
		c.Prices = pricing.Default()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// check refuses a configuration the watcher cannot run with.
func (c *Config) check() error {
	if err := tree.CheckName("agent", c.Agent); err != nil {
		return err
	}
	for _, a := range c.Aliases {
		if err := tree.CheckName("alias", a); err != nil {
			return err
		}
	}
	if len(c.Channels) == 0 {
		return errors.New("watcher: no channel")
	}
	for _, ch := range c.Channels {
		if err := tree.CheckName("channel", ch); err != nil {
			return err
		}
	}
	if c.Runner == nil {
		return errors.New("watcher: no runner")
	}
	if c.Replay != nil && c.Replay.After != "" {
		if _, err := channel.ParseID(c.Replay.After); err != nil {
			return fmt.Errorf("watcher: replay after %q: %w", c.Replay.After, err)
		}
	}
	switch c.SessionScope {
	case "", ScopeChannel, ScopeThread, ScopeNone:
	default:
		return fmt.Errorf("watcher: session scope %q: use %s, %s or %s", c.SessionScope, ScopeChannel, ScopeThread, ScopeNone)
	}
	if c.Trust != "" {
		if _, err := signing.ParsePolicy(string(c.Trust)); err != nil {
			return fmt.Errorf("watcher: %w", err)
		}
	}
	if c.Signer != nil && c.Signer.Agent() != c.Agent {
		return fmt.Errorf("watcher: the key is %s's, not %s's", c.Signer.Agent(), c.Agent)
	}
	if c.BudgetUSD < 0 || c.BudgetTokens < 0 {
		return errors.New("watcher: negative budget")
	}
	if c.MaxTurns < 0 {
		return errors.New("watcher: negative turn limit")
	}
	if c.Poll != 0 && c.Poll < MinPoll {
		return fmt.Errorf("watcher: poll %v is below the minimum %v", c.Poll, MinPoll)
	}
	if c.Heartbeat != 0 && c.Heartbeat < minHeartbeat {
		return fmt.Errorf("watcher: heartbeat %v is below the minimum %v", c.Heartbeat, minHeartbeat)
	}
	return nil
}
