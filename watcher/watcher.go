package watcher

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/prompt"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/workspace/inbox"
	"github.com/collabdev/collab/presence"
)

// Runner runs the model CLI once.
type Runner interface {
	Run(ctx context.Context, req modelcli.Request) (modelcli.Response, error)
}

// costReporter is a Runner that says whether its runs report what they
// cost. A Runner that does not say is taken to report it.
type costReporter interface {
	ReportsCost() bool
}

// tokenReporter is a Runner that says whether its runs report the tokens
// they used (for the budget, priced if need be). A Runner that does not
// say is taken to report them if it reports cost.
type tokenReporter interface {
	ReportsTokens() bool
}

// reportsNothing reports whether r's runs report neither cost nor tokens,
// so no budget can trip.
func reportsNothing(r Runner) bool {
	if t, ok := r.(tokenReporter); ok && t.ReportsTokens() {
		return false
	}
	c, ok := r.(costReporter)
	return ok && !c.ReportsCost()
}

// Publisher announces what the watcher writes on a faster path (NATS),
// after the file is in place. Its errors are never fatal; it logs them.
type Publisher interface {
	PublishMessage(ctx context.Context, m *channel.Message) error
	PublishPresence(s presence.Status) error
}

// Waker tells the watcher to look now. Watch runs until ctx is done. A
// source that knows the new file calls wake(channel, file): the watcher
// then reads that file at once and lists the folder only at its next poll,
// so answering a message does not wait for a listing of a big channel.
// wake("", "") asks for a listing of every channel now; Watch calls it
// once its source is in place (what arrived between the watcher's first
// scan and that moment would otherwise wait for the next poll) and when
// it may have missed events.
type Waker interface {
	Watch(ctx context.Context, channels []string, wake func(channel, file string)) error
}

// Replay makes the first poll return history: messages named at or after
// From, and, if After is set, only those that come after that message.
type Replay struct {
	From  time.Time
	After string // a message id
}

// NoReply is what a model prints when a message needs no answer (a thanks,
// an acknowledgement): the watcher then posts nothing. It ends agent
// conversations that would otherwise bounce until the hop limit.
const NoReply = prompt.NoReply

// item is a message for the agent waiting to be handled.
type item struct {
	msg     channel.Message
	retryAt time.Time       // not before: a claim held by another watcher
	verdict signing.Verdict // on msg's signature; unchecked (Unsigned) under trust any
	prio    inbox.Priority  // msg's, once worked out (rank)
	// notAnswer: not the answer to the running turn's question (it does
	// not verify as the asker's, or its claim is held elsewhere).
	notAnswer bool
}

// rank is the item's place by priority (inbox.Priority.Rank): the
// queue is answered as the inbox lists, high first.
func (it *item) rank() int {
	if it.prio == "" {
		it.prio = inbox.PriorityOf(&it.msg)
	}
	return it.prio.Rank()
}

func (it *item) ref() ref { return ref{Channel: it.msg.SessionID, ID: it.msg.Key()} }

type watcher struct {
	cfg     Config
	log     *slog.Logger
	claims  *claim.Store
	writer  *channel.Writer
	readers map[string]*channel.Reader
	guards  *guards
	// sweepSoon wakes the janitor's delivery-report sweep before its
	// time: the scan read a message with an expiry of its own.
	sweepSoon chan struct{}
	// unpriced are the models whose tokens had no price, each warned
	// about once.
	unpriced map[string]bool

	queue   []*item
	busy    *job
	done    chan jobResult
	asks    chan *asking   // questions of the running turn (ask.go)
	replied map[ref]string // message → our reply, from what we read and wrote
	recent  *recent        // the last messages read, for transcripts
	woken   wakes          // names from the Wakers, taken by the loop
	list    bool           // the next poll lists the channels' folders
	replay  *Replay        // until the first poll is done
	afterTS time.Time      // the JSON time of replay.After, if found
	dirty   bool           // state to save

	sess     *sessions
	awaiting map[string]question // session key → job awaiting its asker's answer
	liveLast map[string]string   // session key → the message its live session's last turn answered
	budget   budget

	outbox outbox // replies not yet posted

	started     time.Time
	lastReply   time.Time
	lastReplyID string
	handled     int
	failed      int
	errLogged   map[string]time.Time

	forged []*item // refused by the trust policy, to report after the scan
	// forgedFiles are forged claims, reply tokens and kill requests to
	// report in their channels (queued from any goroutine); reportedFiles
	// the ones reported, so each is reported once.
	forgedMu      sync.Mutex
	forgedFiles   []forgedFile
	reportedFiles map[forgedFile]bool

	announcer *announcer // posts to the Publisher; nil without one
	other     int        // pid of another watcher of the agent seen on this host; 0: none

	// instance is this watcher's id, a UUIDv7 made at its start: in its
	// claims, job records and presence.
	instance string

	trace hopTrace // spans and metrics (trace.go)
}

// Run runs the watcher until ctx is done, then shuts down gracefully.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	w := newWatcher(cfg)
	defer w.startTelemetry()()
	if cfg.Publisher != nil {
		w.announcer = newAnnouncer(cfg.Publisher, w.log, 2*time.Second)
		defer w.announcer.close(2 * time.Second)
	}
	if err := w.startup(); err != nil {
		return err
	}
	return w.loop(ctx)
}

func newWatcher(cfg Config) *watcher {
	w := &watcher{
		cfg:       cfg,
		log:       cfg.Logger,
		writer:    &channel.Writer{Root: cfg.Root, Now: cfg.Now, Signer: cfg.Signer},
		readers:   make(map[string]*channel.Reader),
		guards:    newGuards(cfg.MaxHops, cfg.Rate, cfg.PairRate),
		sweepSoon: make(chan struct{}, 1),
		done:      make(chan jobResult, 1),
		asks:      make(chan *asking),
		replied:   make(map[ref]string),
		replay:    cfg.Replay,
		errLogged: make(map[string]time.Time),
		awaiting:  make(map[string]question),
		instance:  jobs.NewInstance(),
	}
	w.claims = &claim.Store{Root: cfg.Root, Self: claim.Self(cfg.Agent), Grace: cfg.ClaimGrace, Now: cfg.Now,
		Signer: cfg.Signer, Verifier: cfg.Verifier, Trust: cfg.Trust, Log: cfg.Logger, OnForged: w.forgedFile,
		Dirs: cfg.ClaimDirs}
	w.claims.Self.Host = cfg.Host
	w.claims.Self.Instance = w.instance
	return w
}

func (w *watcher) now() time.Time { return w.cfg.Now().UTC() }

// claimDirs opens the agent's claims folders: Config.ClaimDirs, or the
// files under Root.
func (w *watcher) claimDirs() claim.Dirs {
	if w.cfg.ClaimDirs != nil {
		return w.cfg.ClaimDirs
	}
	return claim.Files{Root: w.cfg.Root}
}

// startup restores state, opens the readers and announces presence.
func (w *watcher) startup() error {
	if (w.cfg.BudgetUSD > 0 || w.cfg.BudgetTokens > 0) && reportsNothing(w.cfg.Runner) {
		w.log.Warn("budget cannot trip: the CLI reports no cost, so every run counts as free", keyCLI, w.cfg.CLI, keyBudget, w.cfg.BudgetUSD, keyMaxTok, w.cfg.BudgetTokens)
	}
	w.warnTrust()
	if err := w.checkPrivate(); err != nil {
		return err
	}
	w.started = w.now()
	w.recent = newRecent(w.cfg.Context, w.started)
	w.findReplayAfter()
	st, err := loadState(w.cfg.Root, w.cfg.Agent, w.started)
	recovering := err != nil
	if recovering {
		// Rescan a window: claims, reply tokens and the replies in the
		// channel say what was answered, so nothing is answered twice.
		w.log.Error("state unreadable; recovering: rescanning the channels", keyErr, err,
			keyRescanFrom, w.started.Add(-w.cfg.RecoveryWindow), keyWindow, w.cfg.RecoveryWindow)
	}
	for _, ch := range w.cfg.Channels {
		if err := w.openReader(ch, st, recovering); err != nil {
			return err
		}
	}
	var serr error
	w.sess, serr = loadSessions(w.cfg.Root, w.cfg.Agent, w.cfg.CLI, w.cfg.SessionScope, w.cfg.SessionTTL, w.started)
	if serr != nil {
		w.log.Warn("sessions unreadable; starting new ones", keyErr, serr)
	}
	// Replies of an earlier run go out first.
	requeue := w.loadOutbox()
	w.retryOutbox(true)
	w.reserve()
	if st != nil {
		w.restore(st)
	}
	w.requeue(requeue)
	w.save()
	w.noteOtherWatcher()
	w.idle()
	w.log.Info("watching", keyChannels, w.cfg.Channels, keyPending, len(w.queue), keyResumed, st != nil,
		keyRecovering, recovering, keyOutbox, len(w.outbox.entries))
	return nil
}

// findReplayAfter finds the JSON time of the message a replay starts
// after, if it is in one of the channels.
func (w *watcher) findReplayAfter() {
	if w.replay == nil || w.replay.After == "" {
		return
	}
	for _, ch := range w.cfg.Channels {
		if m, err := channel.Lookup(w.cfg.Root, ch, w.replay.After); err == nil {
			w.afterTS = m.Time()
			return
		}
	}
}

// openReader opens channel ch's reader where this start begins: the
// replay's floor, the saved cursor, the recovery window, or the end.
func (w *watcher) openReader(ch string, st *state, recovering bool) error {
	// The folder must exist for fsnotify to watch it.
	if err := safedir.MkdirAll(w.cfg.Root.Channel(ch)); err != nil {
		return fmt.Errorf("create channel %s: %w", ch, err)
	}
	var cur channel.Cursor
	seekEnd := true
	switch {
	case w.replay != nil:
		cur, seekEnd = channel.Cursor{Floor: w.replay.From}, false
	case st != nil:
		if c, ok := st.Channels[ch]; ok {
			cur, seekEnd = c, false
		}
	case recovering:
		cur, seekEnd = channel.Cursor{Floor: w.started.Add(-w.cfg.RecoveryWindow)}, false
	}
	r, err := channel.NewReader(w.cfg.Root, ch, cur, channel.ReaderOptions{Now: w.cfg.Now})
	if err != nil {
		return err
	}
	if seekEnd {
		if err := r.SeekEnd(); err != nil {
			return err
		}
	}
	w.readers[ch] = r
	return nil
}

// restore takes up what the saved state says: the budget, the questions
// awaiting an answer, the pending messages and the threads noticed.
func (w *watcher) restore(st *state) {
	w.budget = st.Budget
	maps.Copy(w.awaiting, st.Awaiting)
	for _, p := range st.Pending {
		if _, done := w.replied[p]; done || !slices.Contains(w.cfg.Channels, p.Channel) || w.outbox.find(p) != nil {
			continue // answered from the outbox, or waiting there
		}
		m, err := channel.Lookup(w.cfg.Root, p.Channel, p.ID)
		if err != nil {
			w.log.Warn("pending message gone", keyMsg, p.ID, keyChannel, p.Channel, keyErr, err)
			continue
		}
		m.SessionID, m.ID = p.Channel, m.Key()
		if it := (&item{msg: m}); w.admit(it) {
			w.queue = append(w.queue, it)
		}
	}
	maps.Copy(w.guards.noticed, st.Noticed)
}
