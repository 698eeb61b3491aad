package watcher

import (
	"errors"
	"io/fs"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/registry"
)

// Delivery reports ("bounces", package delivery's "Delivery reports"):
// the watcher that refuses a message by a guard (max-hops, pair-rate,
// trust), or whose job for it fails or is killed, reports it to the
// message's sender at once (bounce). Besides, every watcher sweeps the
// recent messages of its channels at a low rate (sweepBounces): it
// reports the addressees that are undeliverable, or that left a message
// unclaimed past its expiry, and any refusal or failure whose decider
// died before reporting it. delivery.Reporter makes each report once per
// message and addressee, whoever races to send it.

// The defaults of the bounce settings of [Config].
const (
	DefaultBounceEvery  = 30 * time.Second // Config.BounceEvery
	DefaultBounceGrace  = time.Minute      // Config.BounceGrace
	DefaultBounceWindow = 24 * time.Hour   // Config.BounceWindow
	// maxBouncePending bounds the messages a sweep keeps open per channel.
	maxBouncePending = 4096
)

// bounceSettings returns BounceEvery, BounceGrace and BounceWindow with
// their defaults.
func (w *watcher) bounceSettings() (every, grace, window time.Duration) {
	pick := func(d, def time.Duration) time.Duration {
		if d == 0 {
			return def
		}
		return d
	}
	return pick(w.cfg.BounceEvery, DefaultBounceEvery), pick(w.cfg.BounceGrace, DefaultBounceGrace),
		pick(w.cfg.BounceWindow, DefaultBounceWindow)
}

// reporter is the watcher's delivery.Reporter posting with post and
// marking in dirs.
func (w *watcher) reporter(post func(*channel.Message) error, dirs claim.Dirs) *delivery.Reporter {
	return &delivery.Reporter{Root: w.cfg.Root, Dirs: dirs, Agent: w.cfg.Agent, Host: w.cfg.Host,
		Signer: w.cfg.Signer, Post: post, Now: w.cfg.Now}
}

// bounce reports to m's sender, from the watcher's loop, that m reached
// the final bad state for the agent (guard set: refused by it).
func (w *watcher) bounce(m *channel.Message, state, guard, reason string) {
	r := delivery.Report{Agent: w.cfg.Agent, State: state, Guard: guard, Reason: reason}
	id, err := w.reporter(w.postFile, w.claimDirs()).Send(m, r)
	switch {
	case err != nil:
		w.log.Error("cannot send a delivery report", keyMsg, m.ID, keyChannel, m.SessionID, keyErr, err)
	case id != "":
		w.dirty = true
		w.log.Info("delivery report", keyMsg, m.ID, keyChannel, m.SessionID, keyReply, id, keyReason, state)
	}
}

// bounceSweep is the sweep's state, owned by the janitor's goroutine.
type bounceSweep struct {
	readers map[string]*channel.Reader
	open    map[string][]*bounceOpen // channel → its open messages, oldest first
}

// bounceOpen is a recent message with addressees not final yet.
type bounceOpen struct {
	msg    channel.Message
	agents []string
}

// sweepBounces reads what is new in the watcher's channels and reports
// the open addressees whose state became final and bad. Its cost per
// sweep: one listing of each channel folder (channel.Reader), each new
// message read once, and for each message of the last BounceWindow still
// open for some addressee, that addressee's state (delivery.StateFor: a
// handful of files) and its report mark. Answered and reported
// addressees are dropped; nothing older than the window is read again.
func (w *watcher) sweepBounces(s *bounceSweep) {
	if w.cfg.ClaimDirs != nil {
		return // a remote watcher's tree is a mirror: the bridge's side sweeps
	}
	_, grace, window := w.bounceSettings()
	now := w.now()
	if s.readers == nil {
		s.readers, s.open = map[string]*channel.Reader{}, map[string][]*bounceOpen{}
	}
	for _, ch := range w.cfg.Channels {
		w.readBounces(s, ch, now.Add(-window))
		exp := delivery.ChannelExpireAfter(w.cfg.Root, ch)
		kept := s.open[ch][:0]
		for _, o := range s.open[ch] {
			if now.Sub(o.msg.Time()) > window {
				continue
			}
			o.agents = w.sweepMessage(o, exp, grace, now)
			if len(o.agents) > 0 {
				kept = append(kept, o)
			}
		}
		clear(s.open[ch][len(kept):])
		s.open[ch] = kept
	}
}

// readBounces adds the new messages of ch, from floor on, that may take
// a report.
func (w *watcher) readBounces(s *bounceSweep, ch string, floor time.Time) {
	r := s.readers[ch]
	if r == nil {
		var err error
		if r, err = channel.NewReader(w.cfg.Root, ch, channel.Cursor{Floor: floor}, channel.ReaderOptions{Now: w.cfg.Now}); err != nil {
			return
		}
		s.readers[ch] = r
	}
	msgs, _, err := r.Scan()
	if err != nil || len(msgs) == 0 {
		return
	}
	aliases := workflow.Aliases(w.cfg.Root, ch)
	known := func(a string) bool { return registry.KnownTo(w.cfg.Root, a, w.cfg.Verifier) }
	for i := range msgs {
		m := &msgs[i]
		if !delivery.Reportable(m) || m.Time().Before(floor) || len(s.open[ch]) >= maxBouncePending {
			continue
		}
		if agents := delivery.AddresseesIn(m, known, aliases); len(agents) > 0 {
			s.open[ch] = append(s.open[ch], &bounceOpen{msg: *m, agents: agents})
		}
	}
}

// sweepMessage reports what is due for o's open addressees and returns
// those still open. exp is the channel's expiry (0: none).
func (w *watcher) sweepMessage(o *bounceOpen, exp, grace time.Duration, now time.Time) []string {
	m := &o.msg
	if d, ok := delivery.MessageExpireAfter(m); ok {
		exp = d
	}
	opt := delivery.Options{Now: w.cfg.Now, Host: w.cfg.Host, Verifier: w.cfg.Verifier}
	var still []string
	for _, agent := range o.agents {
		if k, err := delivery.ReadReport(w.cfg.Root, m.SessionID, agent, m.Key()); err == nil {
			if w.reportPosted(m, k, grace, now) {
				continue
			}
			still = append(still, agent)
			continue
		}
		a := delivery.StateFor(w.cfg.Root, m.SessionID, m, agent, opt)
		r := delivery.Report{Agent: agent, State: a.State, Guard: a.Guard, Reason: a.Error}
		since := a.Since
		switch {
		case a.State == delivery.Answered:
			continue
		case a.State == delivery.Undeliverable:
			r.Reason, since = a.Note, m.Time()
		case (a.State == delivery.Waiting || a.State == delivery.Seen) && exp > 0:
			r.State, r.Reason = delivery.Expired, "nobody claimed it within "+exp.String()
			since = m.Time().Add(exp - grace)
		case !delivery.Bad(a.State):
			still = append(still, agent)
			continue
		}
		if now.Sub(since) < grace || !w.sweepReport(m, r) {
			still = append(still, agent)
		}
	}
	return still
}

// reportPosted reports whether the report its mark k names is in the
// channel; a mark older than grace whose report is not is posted again
// (its decider died between the two), under the same id.
func (w *watcher) reportPosted(m *channel.Message, k delivery.ReportMark, grace time.Duration, now time.Time) bool {
	if _, err := channel.Lookup(w.cfg.Root, m.SessionID, k.ID); !errors.Is(err, fs.ErrNotExist) {
		return err == nil
	}
	if now.Sub(k.Time) < grace {
		return false
	}
	return w.sweepReport(m, k.Report)
}

// sweepReport sends report r on m from the sweep; it reports whether the
// report is out.
func (w *watcher) sweepReport(m *channel.Message, r delivery.Report) bool {
	post := w.writer.Post
	if w.cfg.writeMessage != nil {
		post = w.cfg.writeMessage
	}
	id, err := w.reporter(post, nil).Send(m, r)
	if err != nil {
		w.log.Warn("cannot send a delivery report", keyMsg, m.ID, keyChannel, m.SessionID, keyErr, err)
		return false
	}
	if id != "" {
		w.log.Info("delivery report", keyMsg, m.ID, keyChannel, m.SessionID, keyReply, id, keyReason, r.State)
	}
	return true
}

// bounceTicker is the sweep's ticker: nil channel when sweeps are off.
func (w *watcher) bounceTicker() (<-chan time.Time, func()) {
	every, _, _ := w.bounceSettings()
	if every < 0 || w.cfg.ClaimDirs != nil {
		return nil, func() {}
	}
	t := time.NewTicker(every)
	return t.C, t.Stop
}
