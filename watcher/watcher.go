package watcher

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"collab/channel"
	"collab/internal/agent/claim"
	"collab/internal/agent/jobs"
	"collab/internal/agent/modelcli"
	"collab/internal/agent/prompt"
	"collab/internal/plumbing/proc"
	"collab/internal/plumbing/safedir"
	"collab/internal/plumbing/tree"
	"collab/presence"
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

// Publisher announces what the watcher writes on a faster path (NATS),
// after the file is in place. Its errors are never fatal; it logs them.
type Publisher interface {
	PublishMessage(ctx context.Context, m *channel.Message) error
	PublishPresence(s presence.Status) error
}

// Waker tells the watcher to poll now. Watch runs until ctx is done. Once
// its source is in place, Watch calls wake once: what arrived between the
// watcher's first scan and that moment would otherwise wait for the next
// poll.
type Waker interface {
	Watch(ctx context.Context, channels []string, wake func()) error
}

// Replay makes the first poll return history: messages named at or after
// From, and, if After is set, only those that come after that message.
type Replay struct {
	From  time.Time
	After string // a message id
}

// Config is a watcher's configuration. Zero durations and counts take the
// defaults named in their comments.
type Config struct {
	Root     tree.Root
	Agent    string
	Channels []string
	Host     string // default os.Hostname()

	Runner     Runner
	CLI        string           // the adapter's name, for job records; default "command"
	Template   *prompt.Template // default prompt.Default()
	Role       string
	Memory     []string // files read fresh for every prompt
	Context    int      // messages of transcript; default 10, <0 none
	Workdir    string
	Env        []string      // more KEY=VALUE for the CLI, before SPEC §7's
	Timeout    time.Duration // per CLI run; default 10m
	PostErrors bool          // post a short error reply when the CLI fails

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
	// day's runs cost this much (as the CLIs report it); 0: no budget. A
	// Runner whose ReportsCost method says false (codex, gemini, command)
	// reports none, so its budget never trips: Run warns at start.
	BudgetUSD float64
	// OrphanAge: temp files older than this, left in the agent's channels,
	// claims and state by writers that crashed mid-write, are removed at
	// start and hourly; default safedir.DefaultOrphanAge (36h), <0 never.
	OrphanAge time.Duration
	// RecoveryWindow is how far back a watcher rescans its channels when
	// its state file is corrupt or unreadable; default
	// DefaultRecoveryWindow. Messages older than that are not answered.
	RecoveryWindow time.Duration

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
	Logger    *slog.Logger
	Now       func() time.Time

	// writeMessage, if set, replaces the channel writer (tests inject
	// write errors through it).
	writeMessage func(*channel.Message) error
}

func (c *Config) setDefaults() error {
	if err := tree.CheckName("agent", c.Agent); err != nil {
		return err
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
	if c.Host == "" {
		c.Host, _ = os.Hostname()
	}
	if c.CLI == "" {
		c.CLI = "command"
	}
	switch c.SessionScope {
	case "":
		c.SessionScope = DefaultSessionScope
	case ScopeChannel, ScopeThread, ScopeNone:
	default:
		return fmt.Errorf("watcher: session scope %q: use %s, %s or %s", c.SessionScope, ScopeChannel, ScopeThread, ScopeNone)
	}
	if c.BudgetUSD < 0 {
		return errors.New("watcher: negative budget")
	}
	if c.Template == nil {
		c.Template = prompt.Default()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Timeout, DefaultTimeout)
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
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Log attribute keys.
const (
	keyMsg     = "msg_id"
	keyChannel = "channel"
	keyFrom    = "from"
	keyReason  = "reason"
	keyReply   = "reply_id"
	keyDur     = "duration"
	keyErr     = "err"
	keyHops    = "hops"
	keyOwner   = "owner"
	keyFile    = "file"
	keyStderr  = "stderr"
)

// item is a message for the agent waiting to be handled.
type item struct {
	msg     channel.Message
	retryAt time.Time // not before: a claim held by another watcher
}

func (it *item) ref() ref { return ref{Channel: it.msg.SessionID, ID: it.msg.Key()} }

// job is the CLI run in progress.
type job struct {
	it      item
	started time.Time
	stop    context.CancelFunc // stops this run alone
	rec     *jobs.Recorder     // nil if the record cannot be written
	key     string             // session key
	killed  bool               // stopped at someone's request
	lost    bool               // stopped: its claim was taken over

	// launching is closed by the job's goroutine as it starts the CLI
	// (and writes WORKING presence alongside); until then (launched false)
	// the record and state wait, so that only the claim stands between a
	// message and its CLI.
	launching chan struct{}
	launched  bool
	answers   string   // the job that asked the question this run answers
	allow     []string // permission rules the answer granted, for this run only
}

type jobResult struct {
	it    item
	resp  modelcli.Response
	err   error
	fresh bool // a resume was refused and the run started afresh

	presenceErr error // writing WORKING presence as the CLI started
}

type watcher struct {
	cfg     Config
	log     *slog.Logger
	claims  *claim.Store
	writer  *channel.Writer
	readers map[string]*channel.Reader
	guards  *guards

	queue   []*item
	busy    *job
	done    chan jobResult
	replied map[ref]string // message → our reply, from what we read and wrote
	recent  *recent        // the last messages read, for transcripts
	replay  *Replay        // until the first poll is done
	afterTS time.Time      // the JSON time of replay.After, if found
	dirty   bool           // state to save

	sess     *sessions
	awaiting map[string]question // session key → job awaiting its asker's answer
	budget   budget

	outbox outbox // replies not yet posted

	started     time.Time
	lastReply   time.Time
	lastReplyID string
	handled     int
	failed      int
	errLogged   map[string]time.Time

	announcer *announcer // posts to the Publisher; nil without one
}

// Run runs the watcher until ctx is done, then shuts down gracefully.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	w := &watcher{
		cfg:       cfg,
		log:       cfg.Logger,
		writer:    &channel.Writer{Root: cfg.Root, Now: cfg.Now},
		readers:   make(map[string]*channel.Reader),
		guards:    newGuards(cfg.MaxHops, cfg.Rate, cfg.PairRate),
		done:      make(chan jobResult, 1),
		replied:   make(map[ref]string),
		replay:    cfg.Replay,
		errLogged: make(map[string]time.Time),
		awaiting:  make(map[string]question),
	}
	w.claims = &claim.Store{Root: cfg.Root, Self: claim.Self(cfg.Agent), Grace: cfg.ClaimGrace, Now: cfg.Now}
	w.claims.Self.Host = cfg.Host
	if cfg.Publisher != nil {
		w.announcer = newAnnouncer(cfg.Publisher, w.log, 2*time.Second)
		defer w.announcer.close(2 * time.Second)
	}
	if err := w.startup(); err != nil {
		return err
	}
	return w.loop(ctx)
}

func (w *watcher) now() time.Time { return w.cfg.Now().UTC() }

// startup restores state, opens the readers and announces presence.
func (w *watcher) startup() error {
	if r, ok := w.cfg.Runner.(costReporter); ok && w.cfg.BudgetUSD > 0 && !r.ReportsCost() {
		w.log.Warn("budget cannot trip: the CLI reports no cost, so every run counts as free", "cli", w.cfg.CLI, "budget_usd", w.cfg.BudgetUSD)
	}
	w.started = w.now()
	w.recent = newRecent(w.cfg.Context, w.started)
	if w.replay != nil && w.replay.After != "" {
		for _, ch := range w.cfg.Channels {
			if m, err := channel.Lookup(w.cfg.Root, ch, w.replay.After); err == nil {
				w.afterTS = m.Time()
				break
			}
		}
	}
	st, err := loadState(w.cfg.Root, w.cfg.Agent, w.started)
	recovering := err != nil
	if recovering {
		// Rescan a window: claims, reply tokens and the replies in the
		// channel say what was answered, so nothing is answered twice.
		w.log.Error("state unreadable; recovering: rescanning the channels", keyErr, err,
			"from", w.started.Add(-w.cfg.RecoveryWindow), "window", w.cfg.RecoveryWindow)
	}
	for _, ch := range w.cfg.Channels {
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
			w.queue = append(w.queue, &item{msg: m})
		}
		for t, at := range st.Noticed {
			w.guards.noticed[t] = at
		}
	}
	w.requeue(requeue)
	w.save()
	w.idle()
	w.log.Info("watching", "channels", w.cfg.Channels, "pending", len(w.queue), "resumed", st != nil, "recovering", recovering, "outbox", len(w.outbox.entries))
	return nil
}

func (w *watcher) loop(ctx context.Context) error {
	wake := make(chan struct{}, 1)
	wctx, stopWakers := context.WithCancel(ctx)
	defer stopWakers()
	for _, wk := range w.cfg.Wakers {
		go func() {
			err := wk.Watch(wctx, w.cfg.Channels, func() {
				select {
				case wake <- struct{}{}:
				default:
				}
			})
			if err != nil && wctx.Err() == nil {
				w.log.Warn("wake source stopped; polling only", keyErr, err)
			}
		}()
	}
	if w.cfg.OrphanAge > 0 {
		go w.janitor(wctx)
	}
	jobCtx, killJob := context.WithCancelCause(context.Background())
	defer killJob(nil)
	poll := time.NewTicker(w.cfg.Poll)
	defer poll.Stop()
	beat := time.NewTicker(w.cfg.Heartbeat)
	defer beat.Stop()

	w.poll()
	w.dispatch(jobCtx)
	// done is nil for a context that is never done (context.Background):
	// stopping, not done, says whether to keep going.
	done, stopping := ctx.Done(), false
	var grace <-chan time.Time
	var hurry <-chan struct{}
	for !stopping || w.busy != nil {
		select {
		case <-done:
			done, stopping = nil, true
			hurry = w.cfg.Hurry
			if w.busy != nil {
				w.log.Info("stopping; waiting for the running CLI", keyMsg, w.busy.it.msg.ID, "grace", w.cfg.Grace)
				grace = time.After(w.cfg.Grace)
			}
		case <-grace:
			w.log.Warn("grace period over; stopping the CLI", keyMsg, w.busy.it.msg.ID)
			killJob(context.Canceled)
		case <-hurry:
			hurry, grace = nil, nil
			if w.busy != nil {
				w.log.Warn("told to hurry; killing the CLI", keyMsg, w.busy.it.msg.ID)
				killJob(proc.ErrKill)
			}
		case <-poll.C:
		case m := <-w.cfg.Announce:
			if r := w.readers[m.SessionID]; r != nil {
				r.Hint(m.File)
			}
		case <-wake:
			// A hint from elsewhere: list even if the folders look unchanged.
			for _, r := range w.readers {
				r.Invalidate()
			}
		case <-beat.C:
			w.heartbeat()
		case <-w.launching():
			w.launched()
		case <-w.cfg.Kills:
			// checkKill, below, looks at the kill file now.
		case r := <-w.done:
			w.finish(r)
		}
		if ctx.Err() != nil {
			stopping = true // take nothing new, even if done was not picked yet
		}
		w.checkKill()
		if !stopping {
			w.poll()
			w.dispatch(jobCtx)
		}
		if w.dirty && (w.busy == nil || w.busy.launched) {
			w.save()
		}
	}
	w.closeOutbox()
	w.setPresence(presence.StateOffline, "")
	w.save()
	w.log.Info("stopped", "handled", w.handled, "failed", w.failed)
	return nil
}

// poll retries the outbox, scans every channel and queues what is for
// the agent.
func (w *watcher) poll() {
	w.retryOutbox(false)
	w.reserve()
	for _, ch := range w.cfg.Channels {
		msgs, skips, err := w.readers[ch].Scan()
		if err != nil {
			w.logOnce("scan:"+ch, "cannot scan channel", keyChannel, ch, keyErr, err)
			continue
		}
		for _, s := range skips {
			w.log.Warn("skipped file", keyChannel, ch, keyFile, s.File, keyReason, string(s.Reason), keyErr, s.Err)
		}
		for i := range msgs {
			// The folder is the channel: a foreign writer's session_id
			// must not send claims or replies elsewhere.
			msgs[i].SessionID = ch
			msgs[i].ID = msgs[i].Key()
			w.recent.add(ch, &msgs[i])
			w.consider(&msgs[i])
		}
		if len(msgs) > 0 {
			w.dirty = true
		}
	}
	w.replay = nil
	slices.SortStableFunc(w.queue, func(a, b *item) int {
		return cmp.Or(a.msg.Time().Compare(b.msg.Time()), cmp.Compare(a.msg.File, b.msg.File))
	})
}

// consider decides what to do with a new message.
func (w *watcher) consider(m *channel.Message) {
	skip := func(reason string) {
		w.log.Info("skip", keyMsg, m.ID, keyChannel, m.SessionID, keyFrom, m.From, keyReason, reason)
	}
	switch {
	case m.From == w.cfg.Agent:
		if m.Metadata.InReplyTo != "" {
			w.replied[ref{m.SessionID, m.Metadata.InReplyTo}] = m.ID
		}
		skip("own message")
	case w.replay != nil && w.replay.After != "" && !after(m, w.replay.After, w.afterTS):
		skip("before replay start")
	case isNotice(m):
		skip("guard notice")
	case !m.IsFor(w.cfg.Agent):
		skip("not addressed")
	case w.awaited(m):
		skip("reply to a message the agent sent with --wait")
	default:
		w.queue = append(w.queue, &item{msg: *m})
		w.log.Info("queued", keyMsg, m.ID, keyChannel, m.SessionID, keyFrom, m.From, keyHops, m.Metadata.Hops, "queue", len(w.queue))
	}
}

// after reports whether m comes after message id, whose JSON time is ts
// (zero: unknown), in channel order: name time, JSON time, name.
// awaited reports whether m answers a message this agent sent with
// `collab send --wait` (or the MCP send_and_wait): that reply goes to the
// command waiting for it, not to a new run of the model.
func (w *watcher) awaited(m *channel.Message) bool {
	if m.Metadata.InReplyTo == "" {
		return false
	}
	parent, err := channel.Lookup(w.cfg.Root, m.SessionID, m.Metadata.InReplyTo)
	if err != nil || parent.From != w.cfg.Agent {
		return false
	}
	return string(parent.Metadata.Extra["await_reply"]) == "true"
}

func after(m *channel.Message, id string, ts time.Time) bool {
	n, err := channel.ParseID(id)
	mn, err2 := channel.ParseName(m.File)
	if err != nil || err2 != nil {
		return true
	}
	if c := mn.Time.Compare(n.Time); c != 0 {
		return c > 0
	}
	if !ts.IsZero() {
		if c := m.Time().Compare(ts); c != 0 {
			return c > 0
		}
	}
	return m.File > id+".json"
}

func isNotice(m *channel.Message) bool {
	_, guard := m.Metadata.Extra["guard"]
	return m.Type == noticeType || guard
}

const noticeType = "notice"

// NoReply is what a model prints when a message needs no answer (a thanks,
// an acknowledgement): the watcher then posts nothing. It ends agent
// conversations that would otherwise bounce until the hop limit.
const NoReply = prompt.NoReply

// dispatch starts the next CLI run if none is running.
func (w *watcher) dispatch(jobCtx context.Context) {
	for w.busy == nil {
		now := w.now()
		i := slices.IndexFunc(w.queue, func(it *item) bool { return !now.Before(it.retryAt) })
		if i < 0 {
			return
		}
		if !w.guards.rate.allow(now) {
			w.logOnce("rate", "rate limit reached; messages wait", "rate", w.cfg.Rate, "queue", len(w.queue))
			return
		}
		if w.throttled(now) {
			return
		}
		if w.outbox.inMemory() {
			w.logOnce("outbox-hold", "a reply is held in memory only (no room on disk); no new run until it is kept or posted", "queue", len(w.queue))
			return
		}
		it := w.queue[i]
		m := &it.msg
		c, outcome, err := w.claims.Acquire(m.SessionID, m.Key())
		if err != nil {
			w.log.Warn("cannot claim", keyMsg, m.ID, keyErr, err)
			it.retryAt = now.Add(5 * w.cfg.Poll)
			continue
		}
		switch outcome {
		case claim.Held:
			w.log.Info("held by another watcher", keyMsg, m.ID, keyOwner, c.Owner.Host+"/"+strconv.Itoa(c.Owner.PID))
			it.retryAt = now.Add(w.cfg.Heartbeat)
			continue
		case claim.Done:
			w.log.Info("skip", keyMsg, m.ID, keyReason, "already "+c.Status, keyOwner, c.Owner.Host+"/"+strconv.Itoa(c.Owner.PID))
			w.remove(i)
			continue
		}
		w.remove(i)
		w.log.Info("claimed", keyMsg, m.ID, keyChannel, m.SessionID, keyFrom, m.From, "takeovers", c.Takeovers)
		if w.cfg.MaxHops > 0 && m.Metadata.Hops >= w.cfg.MaxHops {
			w.stopByGuard(it, "max-hops", fmt.Sprintf("the thread reached the hop limit (%d)", w.cfg.MaxHops))
			continue
		}
		if w.cfg.PairRate > 0 && !w.guards.pairAllowed(m.From, m.Metadata.Hops, now) {
			w.stopByGuard(it, "pair-rate", fmt.Sprintf("more than %d replies a minute to %s", w.cfg.PairRate, m.From))
			continue
		}
		if id, ok := w.alreadyReplied(it); ok {
			w.log.Info("skip", keyMsg, m.ID, keyReason, "already replied", keyReply, id)
			w.finishClaim(it, claim.Replied, id, "")
			continue
		}
		w.guards.rate.add(now)
		w.start(jobCtx, it, now)
	}
}

func (w *watcher) remove(i int) {
	w.queue = slices.Delete(w.queue, i, i+1)
	w.dirty = true
}

// alreadyReplied reports a reply that exists for the item: one we read, or
// one named by a reply token and present in the channel.
func (w *watcher) alreadyReplied(it *item) (string, bool) {
	if id, ok := w.replied[it.ref()]; ok {
		return id, true
	}
	c, err := w.claims.Read(it.msg.SessionID, it.msg.Key())
	if err == nil && c.Reply != "" {
		if _, err := channel.Lookup(w.cfg.Root, it.msg.SessionID, c.Reply); err == nil {
			return c.Reply, true
		}
	}
	return "", false
}

// start runs the CLI in a goroutine of its own. The message is claimed:
// that is all exactness needs before the CLI starts. WORKING presence is
// written by the goroutine while the CLI starts; the job record and the
// state once the goroutine says the CLI is starting (launched), or at the
// latest when it ends (finish).
func (w *watcher) start(jobCtx context.Context, it *item, now time.Time) {
	m := &it.msg
	key := w.sess.key(m.SessionID, m.ThreadID())
	resume := w.sess.get(key, now)
	rec, err := jobs.Prepare(w.cfg.Root, jobs.Job{
		ID: jobs.ID(m.Key()), Agent: w.cfg.Agent, Host: w.cfg.Host, Channel: m.SessionID,
		Message: m.Key(), From: m.From, CLI: w.cfg.CLI, Session: resume, Resumed: resume != "", Started: now,
	}, w.cfg.Now)
	if err != nil {
		w.logOnce("job", "cannot record the job", keyMsg, m.ID, keyErr, err)
	}
	ctx, stop := context.WithCancel(jobCtx)
	j := &job{it: *it, started: now, stop: stop, rec: rec, key: key, launching: make(chan struct{})}
	if q, ok := w.awaiting[key]; ok && q.Asker == m.From {
		// The asker answers the question the CLI asked in this session.
		rec.Event(modelcli.Event{Kind: modelcli.EventInputSent, Text: m.Content.Text, Data: jsonString(q.Job)})
		j.answers = q.Job
		if len(q.Allow) > 0 && allows(m.Content.Text) {
			j.allow = q.Allow
			rec.Event(modelcli.Event{Kind: modelcli.EventProgress, Text: "allowed for this run: " + strings.Join(q.Allow, ", ")})
			w.log.Info("allowed for this run", keyMsg, m.ID, "job", q.Job, "allow", q.Allow)
		}
		delete(w.awaiting, key)
	}
	transcript, haveTranscript := w.recent.before(m.SessionID, m, w.cfg.Context)
	w.busy = j
	working := w.status(presence.SubWorking, m.ID)
	w.log.Info("running", keyMsg, m.ID, "job", jobs.ID(m.Key()), "session", resume)
	go func() {
		defer stop()
		w.done <- w.run(ctx, *it, resume, j.allow, rec, transcript, haveTranscript, j.launching, working)
	}()
}

// launching returns the running job's launching channel while the job has
// not been recorded as launched; nil (never ready) otherwise.
func (w *watcher) launching() <-chan struct{} {
	if w.busy == nil || w.busy.launched {
		return nil
	}
	return w.busy.launching
}

// launched records the running job, now that its CLI is starting: the job
// record (which prunes old ones) and the end of the job whose question it
// answers.
func (w *watcher) launched() {
	j := w.busy
	if j == nil || j.launched {
		return
	}
	j.launched = true
	if err := j.rec.Persist(); err != nil {
		w.logOnce("job", "cannot record the job", keyMsg, j.it.msg.ID, keyErr, err)
	}
	if j.answers != "" {
		if err := jobs.SetStatus(w.cfg.Root, w.cfg.Agent, j.answers, jobs.Completed); err != nil {
			w.log.Warn("cannot close the job that asked", "job", j.answers, keyErr, err)
		}
	}
}

// run builds the prompt and runs the CLI. It runs in its own goroutine and
// touches no watcher state; it closes launching just before the CLI starts
// (or on its way out if it never does), and writes the working presence
// while the CLI starts, before it returns. transcript is the context from
// the watcher's memory if ok; else run reads it from the folder. allow
// are permission rules granted to this run alone.
func (w *watcher) run(ctx context.Context, it item, resume string, allow []string, rec *jobs.Recorder, transcript []channel.Message, ok bool, launching chan struct{}, working presence.Status) (res jobResult) {
	closeOnce := sync.OnceFunc(func() { close(launching) })
	defer closeOnce()
	m := it.msg
	if !ok {
		var err error
		transcript, err = channel.Recent(w.cfg.Root, m.SessionID, m.File, w.cfg.Context)
		if err != nil {
			w.log.Warn("no transcript for the prompt", keyMsg, m.ID, keyErr, err)
		}
	}
	text, err := w.cfg.Template.Render(prompt.Data{
		Agent:      w.cfg.Agent,
		Channel:    m.SessionID,
		Host:       w.cfg.Host,
		Role:       w.cfg.Role,
		Memory:     prompt.LoadMemory(w.cfg.Memory, 0),
		Transcript: transcript,
		Message:    m,
		MaxHops:    max(w.cfg.MaxHops, 0),
		Now:        w.now(),
	})
	if err != nil {
		return jobResult{it: it, err: fmt.Errorf("build prompt: %w", err)}
	}
	req := modelcli.Request{
		Prompt:     text,
		Env:        w.env(&m),
		Dir:        w.cfg.Workdir,
		Timeout:    w.cfg.Timeout,
		Session:    resume,
		AllowTools: allow,
		OnEvent:    rec.Event,
	}
	closeOnce()
	// Presence says WORKING while the CLI starts, not before, and before
	// the loop hears that the run ended (and writes IDLE).
	wrote := make(chan error, 1)
	go func() { wrote <- w.writePresence(working) }()
	defer func() { res.presenceErr = <-wrote }()
	resp, err := w.cfg.Runner.Run(ctx, req)
	if errors.Is(err, modelcli.ErrSessionGone) && resume != "" && ctx.Err() == nil {
		w.log.Warn("session cannot be resumed; starting a new one", keyMsg, m.ID, "session", resume, keyErr, err)
		rec.Event(modelcli.Event{Kind: modelcli.EventProgress, Text: "session " + resume + " cannot be resumed; starting a new one"})
		rec.Update(func(j *jobs.Job) { j.Session, j.Resumed = "", false })
		req.Session = ""
		resp, err = w.cfg.Runner.Run(ctx, req)
		return jobResult{it: it, resp: resp, err: err, fresh: true}
	}
	return jobResult{it: it, resp: resp, err: err}
}

// env is SPEC §7's environment for the CLI.
func (w *watcher) env(m *channel.Message) []string {
	return append(slices.Clip(w.cfg.Env),
		"COLLAB_ROOT="+string(w.cfg.Root),
		"COLLAB_AGENT="+w.cfg.Agent,
		"COLLAB_CHANNEL="+m.SessionID,
		"COLLAB_MESSAGE_ID="+m.ID,
		"COLLAB_FROM="+m.From,
		"COLLAB_HOPS="+strconv.Itoa(m.Metadata.Hops),
	)
}

// finish handles the end of a CLI run: post the reply or record the failure.
func (w *watcher) finish(r jobResult) {
	j := w.busy
	if !j.launched {
		w.launched() // the CLI ended (or never started) before the loop heard
	}
	if r.presenceErr != nil {
		w.logOnce("presence", "cannot write presence", keyErr, r.presenceErr)
	}
	w.busy = nil
	it := r.it
	m := &it.msg
	now := w.now()
	dur := now.Sub(j.started)
	w.spend(r.resp.CostUSD, now)
	switch {
	case r.resp.Session != "":
		if err := w.sess.put(j.key, r.resp.Session, now); err != nil {
			w.logOnce("sessions", "cannot save sessions", keyErr, err)
		}
	case r.fresh:
		w.sess.drop(j.key)
	}
	switch {
	case j.killed:
		w.failed++
		w.log.Warn("killed by request", keyMsg, m.ID, "job", jobs.ID(m.Key()), keyDur, dur)
		j.rec.Finish(jobs.Killed, r.resp, errors.New("killed by request"))
		w.finishClaim(&it, claim.Failed, "", "job killed by request")
	case r.err != nil:
		w.failed++
		w.log.Error("failed", keyMsg, m.ID, keyChannel, m.SessionID, keyDur, dur, keyErr, r.err, keyStderr, tail(r.resp.Stderr, 2000))
		j.rec.Finish(jobs.Failed, r.resp, r.err)
		note := r.err.Error()
		lost := errors.Is(w.claims.Heartbeat(m.SessionID, m.Key()), claim.ErrLost)
		if lost {
			// Another watcher owns the message now and will answer it: an
			// error reply would take its reply token.
			w.log.Info("claim lost; not posting", keyMsg, m.ID)
		} else if w.cfg.PostErrors {
			w.post(&it, fmt.Sprintf("[collab] %s could not answer: %s", w.cfg.Agent, tail(note, 500)), claim.Failed, nil)
		} else {
			w.finishClaim(&it, claim.Failed, "", tail(note, 500))
		}
	case r.resp.Text == NoReply && r.resp.Question == nil:
		w.handled++
		w.log.Info("no reply needed", keyMsg, m.ID, keyChannel, m.SessionID, keyDur, dur)
		j.rec.Finish(jobs.Completed, r.resp, nil)
		w.finishClaim(&it, claim.Skipped, "", "the model answered "+NoReply)
	default:
		if r.resp.Truncated {
			w.log.Warn("output truncated", keyMsg, m.ID)
		}
		text, status, extra := r.resp.Text, jobs.Completed, map[string]json.RawMessage(nil)
		if q := r.resp.Question; q != nil {
			// The CLI stopped to ask: the asker gets the question, and the
			// answer resumes this session (none to resume with scope none).
			text = questionText(r.resp.Text, q)
			ni := map[string]any{"job": jobs.ID(m.Key()), "options": q.Options}
			if len(q.Allow) > 0 {
				ni["allow"] = q.Allow
			}
			extra = map[string]json.RawMessage{"needs_input": mustJSON(ni)}
			if j.key != "" {
				status = jobs.AwaitingInput
			}
		}
		id := w.post(&it, text, claim.Replied, extra)
		if id != "" {
			j.rec.Update(func(jb *jobs.Job) { jb.Reply = id }) // before the status says done
		}
		j.rec.Finish(status, r.resp, nil)
		if id == "" {
			break
		}
		w.handled++
		w.lastReply, w.lastReplyID = now, id
		w.guards.replied(m.From, m.Metadata.Hops, now)
		if status == jobs.AwaitingInput {
			w.awaiting[j.key] = question{Job: jobs.ID(m.Key()), Asker: m.From, Allow: r.resp.Question.Allow}
			w.log.Info("asked for input", keyMsg, m.ID, keyReply, id, "job", jobs.ID(m.Key()), keyDur, dur)
		} else {
			w.log.Info("replied", keyMsg, m.ID, keyChannel, m.SessionID, keyReply, id, keyDur, dur, "cost_usd", r.resp.CostUSD)
		}
	}
	if err := j.rec.Err(); err != nil {
		w.logOnce("job", "cannot record the job", keyMsg, m.ID, keyErr, err)
	}
	w.dirty = true
	w.idle()
}

// questionText is the message that asks for input: the model's words, the
// question and the options.
func questionText(said string, q *modelcli.Question) string {
	var b strings.Builder
	if said = strings.TrimSpace(said); said != "" && said != NoReply {
		b.WriteString(said)
		b.WriteString("\n\n")
	}
	b.WriteString(q.Text)
	if len(q.Options) > 0 {
		fmt.Fprintf(&b, "\n\nReply with one of: %s.", strings.Join(q.Options, ", "))
	}
	if len(q.Allow) > 0 {
		fmt.Fprintf(&b, " A reply whose first word is %s, yes or y lets the run that resumes the session use %s (that run only); any other reply is passed on as it is.",
			modelcli.AllowOption, strings.Join(q.Allow, ", "))
	}
	return b.String()
}

// allowWords are the first words of an answer that grant a question's
// Allow rules.
var allowWords = []string{modelcli.AllowOption, "yes", "y"}

// allows reports whether answer grants a question's Allow rules: its
// first word, in any case and without trailing punctuation, is one of
// allowWords ("Allow.", "yes, go ahead"; not "no", "deny", "allowing").
func allows(answer string) bool {
	words := strings.Fields(answer)
	if len(words) == 0 {
		return false
	}
	first := strings.TrimRightFunc(words[0], unicode.IsPunct)
	for _, w := range allowWords {
		if strings.EqualFold(first, w) {
			return true
		}
	}
	return false
}

func mustJSON(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

func jsonString(s string) json.RawMessage { return mustJSON(s) }

// stopByGuard records that a guard stopped the item and posts at most one
// notice for its thread.
func (w *watcher) stopByGuard(it *item, guard, why string) {
	m := &it.msg
	thread := m.ThreadID()
	w.log.Warn("guard stopped a message", keyMsg, m.ID, keyFrom, m.From, "guard", guard, keyHops, m.Metadata.Hops, "thread", thread)
	w.finishClaim(it, claim.Skipped, "", guard+": "+why)
	if !w.guards.notice(thread, w.now()) {
		return
	}
	w.dirty = true
	g, _ := json.Marshal(guard)
	notice := &channel.Message{
		SessionID: m.SessionID,
		From:      w.cfg.Agent,
		To:        channel.Broadcast,
		Type:      noticeType,
		Content:   channel.Content{Text: fmt.Sprintf("[collab] %s stopped answering this thread: %s. A person can reply to continue.", w.cfg.Agent, why)},
		Metadata: channel.Metadata{
			Mode:      "watcher",
			Turn:      w.cfg.Agent,
			InReplyTo: m.ID,
			Hops:      m.Metadata.Hops + 1,
			Thread:    thread,
			Host:      w.cfg.Host,
			Extra:     map[string]json.RawMessage{"guard": g},
		},
	}
	if err := w.postFile(notice); err != nil {
		w.log.Error("cannot post a guard notice", keyMsg, m.ID, keyErr, err)
	}
}

// postFile writes a message to its channel, then announces it.
func (w *watcher) postFile(m *channel.Message) error {
	write := w.writer.Post
	if w.cfg.writeMessage != nil {
		write = w.cfg.writeMessage
	}
	if err := write(m); err != nil {
		return err
	}
	if w.announcer != nil {
		w.announcer.announce(m)
	}
	return nil
}

func (w *watcher) finishClaim(it *item, status, reply, note string) {
	if err := w.claims.Finish(it.msg.SessionID, it.msg.Key(), status, reply, note); err != nil {
		w.log.Warn("cannot finish the claim", keyMsg, it.msg.ID, keyErr, err)
	}
}

// heartbeat refreshes presence and the running job's claim.
func (w *watcher) heartbeat() {
	w.checkKill()
	if w.busy != nil {
		w.setPresence(presence.SubWorking, w.busy.it.msg.ID)
		err := w.claims.Heartbeat(w.busy.it.msg.SessionID, w.busy.it.msg.Key())
		if errors.Is(err, claim.ErrLost) {
			// Judged gone and taken over (a long stall, a cut-off host):
			// the new owner answers; stop spending on a reply it will post.
			if !w.busy.lost {
				w.log.Warn("claim taken over; stopping the CLI", keyMsg, w.busy.it.msg.ID, keyErr, err)
				w.busy.lost = true
				w.busy.stop()
			}
		} else if err != nil {
			w.logOnce("claim-heartbeat", "cannot refresh the claim", keyMsg, w.busy.it.msg.ID, keyErr, err)
		}
		return
	}
	w.idle()
}

// idle writes the presence of a watcher with no CLI running.
func (w *watcher) idle() {
	switch {
	case w.cfg.BudgetUSD > 0 && w.budget.Spent >= w.cfg.BudgetUSD && w.budget.Day == w.now().Format(time.DateOnly):
		w.setPresence(presence.SubThrottled, "")
	case len(w.awaiting) > 0:
		w.setPresence(presence.SubWaiting, "")
	default:
		w.setPresence(presence.SubIdle, "")
	}
}

// checkKill stops the running job if someone asked for it (collab jobs kill).
func (w *watcher) checkKill() {
	if w.busy == nil || w.busy.killed {
		return
	}
	id := jobs.ID(w.busy.it.msg.Key())
	if jobs.KillRequested(w.cfg.Root, w.cfg.Agent, id) {
		w.log.Warn("kill requested; stopping the CLI", keyMsg, w.busy.it.msg.ID, "job", id)
		w.busy.killed = true
		w.busy.stop()
	}
}

// save writes the state file.
func (w *watcher) save() {
	st := &state{
		Saved:    w.now(),
		Budget:   w.budget,
		Awaiting: w.awaiting,
		Channels: make(map[string]channel.Cursor, len(w.readers)),
		Noticed:  w.guards.noticed,
	}
	for ch, r := range w.readers {
		st.Channels[ch] = r.Cursor()
	}
	if w.busy != nil {
		st.Pending = append(st.Pending, w.busy.it.ref())
	}
	for _, it := range w.queue {
		st.Pending = append(st.Pending, it.ref())
	}
	if err := saveState(w.cfg.Root, w.cfg.Agent, st); err != nil {
		w.logOnce("state", "cannot save state", keyErr, err)
		return
	}
	w.dirty = false
}

// logOnce logs a warning at most once a minute per key, so a lasting
// failure (an NFS server away) does not flood the log.
func (w *watcher) logOnce(key, msg string, args ...any) {
	now := w.now()
	if at, ok := w.errLogged[key]; ok && now.Sub(at) < time.Minute {
		return
	}
	w.errLogged[key] = now
	w.log.Warn(msg, args...)
}

// cut shortens text to at most n bytes, on a UTF-8 boundary, and says so.
func cut(text string, n int) string {
	note := fmt.Sprintf("\n[… cut by collab: the output was %d bytes]", len(text))
	n = max(n-len(note), 0)
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n] + note
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

func randHex4() string {
	var b [2]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
