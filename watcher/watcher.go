package watcher

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/prompt"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/safedir"
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
}

func (it *item) ref() ref { return ref{Channel: it.msg.SessionID, ID: it.msg.Key()} }

type watcher struct {
	cfg     Config
	log     *slog.Logger
	claims  *claim.Store
	writer  *channel.Writer
	readers map[string]*channel.Reader
	guards  *guards
	// unpriced are the models whose tokens had no price, each warned
	// about once.
	unpriced map[string]bool

	queue   []*item
	busy    *job
	done    chan jobResult
	replied map[ref]string // message → our reply, from what we read and wrote
	recent  *recent        // the last messages read, for transcripts
	woken   wakes          // names from the Wakers, taken by the loop
	list    bool           // the next poll lists the channels' folders
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
}

// Run runs the watcher until ctx is done, then shuts down gracefully.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	w := newWatcher(cfg)
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
		done:      make(chan jobResult, 1),
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

// stopping is the loop's way to its end.
type stopping struct {
	done  <-chan struct{}  // ctx.Done() until seen, then nil
	now   bool             // take nothing new
	grace <-chan time.Time // the running CLI's grace is over
	hurry <-chan struct{}  // Config.Hurry once stopping
}

// loop is the one goroutine that owns the watcher's state: it polls, runs
// one job at a time, beats and, once ctx is done, lets the running job
// end within the grace.
func (w *watcher) loop(ctx context.Context) error {
	wctx, stopWakers := context.WithCancel(ctx)
	defer stopWakers()
	wake := w.startWakers(wctx)
	if w.cfg.OrphanAge > 0 {
		go w.janitor(wctx)
	}
	jobCtx, killJob := context.WithCancelCause(context.Background())
	defer killJob(nil)
	poll := time.NewTicker(w.cfg.Poll)
	defer poll.Stop()
	beat := time.NewTicker(w.cfg.Heartbeat)
	defer beat.Stop()

	w.list = true
	w.poll()
	w.dispatch(jobCtx)
	// done is nil for a context that is never done (context.Background):
	// stop.now, not done, says whether to keep going.
	stop := stopping{done: ctx.Done()}
	for !stop.now || w.busy != nil {
		select {
		case <-stop.done:
			w.beginStop(&stop)
		case <-stop.grace:
			w.log.Warn("grace period over; stopping the CLI", keyMsg, w.busy.it.msg.ID)
			killJob(context.Canceled)
		case <-stop.hurry:
			stop.hurry, stop.grace = nil, nil
			if w.busy != nil {
				w.log.Warn("told to hurry; killing the CLI", keyMsg, w.busy.it.msg.ID)
				killJob(proc.ErrKill)
			}
		case <-poll.C:
			w.list = true
		case m := <-w.cfg.Announce:
			if r := w.readers[m.SessionID]; r != nil {
				r.Hint(m.File)
			}
		case <-wake:
			w.takeWakes()
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
			stop.now = true // take nothing new, even if done was not picked yet
		}
		w.step(jobCtx, stop.now)
	}
	w.stopped()
	return nil
}

// wakes collects the Wakers' wake-ups between two turns of the loop.
type wakes struct {
	mu    sync.Mutex
	files map[string][]string // by channel
	list  bool                // a listing of every channel was asked for
}

func (k *wakes) add(ch, file string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ch == "" || file == "" || len(k.files[ch]) >= maxPendingWakes {
		k.list = true
		return
	}
	if k.files == nil {
		k.files = make(map[string][]string)
	}
	k.files[ch] = append(k.files[ch], file)
}

// maxPendingWakes bounds the names kept between two turns of the loop;
// beyond it a listing is asked for instead.
const maxPendingWakes = 1024

func (k *wakes) take() (map[string][]string, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	files, list := k.files, k.list
	k.files, k.list = nil, false
	return files, list
}

// startWakers runs the Wakers until ctx is done; the channel returned
// receives their wake-ups (at most one waits), whose names are in w.woken.
func (w *watcher) startWakers(ctx context.Context) <-chan struct{} {
	wake := make(chan struct{}, 1)
	for _, wk := range w.cfg.Wakers {
		go func() {
			err := wk.Watch(ctx, w.cfg.Channels, func(ch, file string) {
				w.woken.add(ch, file)
				select {
				case wake <- struct{}{}:
				default:
				}
			})
			if err != nil && ctx.Err() == nil {
				w.log.Warn("wake source stopped; polling only", keyErr, err)
			}
		}()
	}
	return wake
}

// beginStop takes nothing new from now on and gives a running CLI the
// grace to finish.
func (w *watcher) beginStop(s *stopping) {
	s.done, s.now = nil, true
	s.hurry = w.cfg.Hurry
	if w.busy != nil {
		w.log.Info("stopping; waiting for the running CLI", keyMsg, w.busy.it.msg.ID, keyGrace, w.cfg.Grace)
		s.grace = time.After(w.cfg.Grace)
	}
}

// step is what the loop does after each event: look for a kill request,
// poll and start the next job unless stopping, save the state if it
// changed (once the running job is recorded as launched).
func (w *watcher) step(jobCtx context.Context, stopping bool) {
	w.checkKill()
	if !stopping {
		w.poll()
		w.dispatch(jobCtx)
	}
	if w.dirty && (w.busy == nil || w.busy.launched) {
		w.save()
	}
}

// stopped is the loop's end: a last try at the outbox, OFFLINE presence
// and the state saved.
func (w *watcher) stopped() {
	w.closeOutbox()
	if w.presenceMine() && (w.other == 0 || !proc.PIDAlive(w.other)) {
		w.setPresence(presence.StateOffline, "")
	} else {
		w.log.Warn("another watcher of this agent runs on this host; not writing OFFLINE", keyPID, w.other)
	}
	w.save()
	w.log.Info("stopped", keyHandled, w.handled, keyFailed, w.failed)
}

// takeWakes hands the files the Wakers named to the readers; a wake-up
// with no name makes the next poll list every channel, even those whose
// folders look unchanged.
func (w *watcher) takeWakes() {
	files, list := w.woken.take()
	for ch, names := range files {
		if r := w.readers[ch]; r != nil {
			for _, f := range names {
				r.Hint(f)
			}
		}
	}
	if list {
		for _, r := range w.readers {
			r.Invalidate()
		}
		w.list = true
	}
}

// poll retries the outbox, scans every channel and queues what is for
// the agent. Only a poll at the poll interval (or asked for by a wake-up)
// lists the channels' folders; between those, the files named by hints
// are read, so that a message a notification named is answered without
// waiting for a listing.
func (w *watcher) poll() {
	w.retryOutbox(false)
	w.reserve()
	list := w.list
	w.list = false
	for _, ch := range w.cfg.Channels {
		w.scan(ch, list)
	}
	w.reportForged()
	w.reportForgedFiles()
	w.replay = nil
	slices.SortStableFunc(w.queue, func(a, b *item) int {
		return cmp.Or(a.msg.Time().Compare(b.msg.Time()), cmp.Compare(a.msg.File, b.msg.File))
	})
}

// scan reads what is new in channel ch: with list, what a listing finds
// when the folder changed; without, the hinted files only.
func (w *watcher) scan(ch string, list bool) {
	scan := w.readers[ch].ScanHinted
	if list {
		scan = w.readers[ch].Scan
	}
	msgs, skips, err := scan()
	if err != nil {
		w.logOnce("scan:"+ch, "cannot scan channel", keyChannel, ch, keyErr, err)
		return
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

// reasonNotAddressed is the skip of a message for another agent, logged
// at the debug level only.
const reasonNotAddressed = "not addressed"

// consider decides what to do with a new message.
func (w *watcher) consider(m *channel.Message) {
	skip := func(reason string) {
		level := slog.LevelInfo
		if reason == reasonNotAddressed {
			level = slog.LevelDebug // most of a busy channel
		}
		w.log.Log(context.Background(), level, "skip", keyMsg, m.ID, keyChannel, m.SessionID, keyFrom, m.From, keyReason, reason)
	}
	switch {
	case m.From == w.cfg.Agent:
		if m.Metadata.InReplyTo != "" && w.ownReply(m) {
			w.replied[ref{m.SessionID, m.Metadata.InReplyTo}] = m.ID
		}
		skip("own message")
	case w.replay != nil && w.replay.After != "" && !after(m, w.replay.After, w.afterTS):
		skip("before replay start")
	case isNotice(m):
		skip("guard notice")
	case !m.IsForAny(w.cfg.Agent, w.cfg.Aliases...):
		skip(reasonNotAddressed)
	case w.awaited(m):
		skip("reply to a message the agent sent with --wait")
	default:
		it := &item{msg: *m}
		if !w.admit(it) {
			return
		}
		w.queue = append(w.queue, it)
		w.log.Info("queued", keyMsg, m.ID, keyChannel, m.SessionID, keyFrom, m.From, keyHops, m.Metadata.Hops, keyQueue, len(w.queue))
		w.markSeen(m, "", "")
	}
}

// markSeen records, for every host to see, that the watcher noticed m
// (and, with guard set, refused it before any claim): see package
// delivery.
func (w *watcher) markSeen(m *channel.Message, guard, why string) {
	if err := delivery.MarkSeenIn(w.claimDirs(), m.SessionID, m.Key(), w.claims.Self, w.now(), guard, why, w.cfg.Signer); err != nil {
		w.logOnce("seen", "cannot record a message as seen", keyMsg, m.ID, keyErr, err)
	}
}

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
	return parent.AwaitsReply()
}

// after reports whether m comes after message id, whose JSON time is ts
// (zero: unknown), in channel order: name time, JSON time, name.
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

// dispatch starts the next CLI run if none is running.
func (w *watcher) dispatch(jobCtx context.Context) {
	for w.busy == nil {
		now := w.now()
		i := slices.IndexFunc(w.queue, func(it *item) bool { return !now.Before(it.retryAt) })
		if i < 0 || !w.mayStart(now) {
			return
		}
		it := w.queue[i]
		if !w.claimItem(i, now) || w.guardStops(it, now) {
			continue
		}
		if id, ok := w.alreadyReplied(it); ok {
			w.log.Info("skip", keyMsg, it.msg.ID, keyReason, "already replied", keyReply, id)
			w.finishClaim(it, claim.Replied, id, "")
			continue
		}
		w.guards.rate.add(now)
		w.start(jobCtx, it, now)
	}
}

// mayStart reports whether a new run may start now: the rate limit and the
// budget allow it, and no reply is held in memory only.
func (w *watcher) mayStart(now time.Time) bool {
	if !w.guards.rate.allow(now) {
		w.logOnce("rate", "rate limit reached; messages wait", keyRate, w.cfg.Rate, keyQueue, len(w.queue))
		return false
	}
	if w.throttled(now) {
		return false
	}
	if w.outbox.inMemory() {
		w.logOnce("outbox-hold", "a reply is held in memory only (no room on disk); no new run until it is kept or posted", keyQueue, len(w.queue))
		return false
	}
	return true
}

// claimItem claims queue item i, and reports whether this watcher now owns
// it. An item claimed (or done) elsewhere leaves the queue or waits.
func (w *watcher) claimItem(i int, now time.Time) bool {
	it := w.queue[i]
	m := &it.msg
	c, outcome, err := w.claims.Acquire(m.SessionID, m.Key())
	if err != nil {
		w.log.Warn("cannot claim", keyMsg, m.ID, keyErr, err)
		it.retryAt = now.Add(5 * w.cfg.Poll)
		return false
	}
	owner := c.Owner.Host + "/" + strconv.Itoa(c.Owner.PID)
	switch outcome {
	case claim.Held:
		w.log.Info("held by another watcher", keyMsg, m.ID, keyOwner, owner)
		it.retryAt = now.Add(w.cfg.Heartbeat)
		return false
	case claim.Done:
		w.log.Info("skip", keyMsg, m.ID, keyReason, "already "+c.Status, keyOwner, owner)
		w.remove(i)
		return false
	}
	w.remove(i)
	w.log.Info("claimed", keyMsg, m.ID, keyChannel, m.SessionID, keyFrom, m.From, keyTakeover, c.Takeovers)
	return true
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
