package watcher

import (
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
)

// Delivery reports ("bounces", package delivery's "Delivery reports"):
// the watcher that refuses a message by a guard (max-hops, pair-rate,
// trust), or whose job for it fails or is killed, reports it to the
// message's sender at once (bounce; not a remote watcher: see there). Besides, every watcher sweeps the
// recent messages of its channels at a low rate (delivery.Sweeper, run
// by the janitor; a remote watcher, whose tree is a mirror, does not): it
// reports the addressees that are undeliverable, or that left a message
// unclaimed past its expiry, and any refusal or failure whose decider
// died before reporting it. delivery.Reporter makes each report once per
// message and addressee, whoever races to send it.

// The defaults of the bounce settings of [Config].
const (
	DefaultBounceEvery  = delivery.DefaultSweepEvery  // Config.BounceEvery
	DefaultBounceGrace  = delivery.DefaultSweepGrace  // Config.BounceGrace
	DefaultBounceWindow = delivery.DefaultSweepWindow // Config.BounceWindow
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

// reporter is the watcher's delivery.Reporter posting with post.
func (w *watcher) reporter(post func(*channel.Message) error) *delivery.Reporter {
	return &delivery.Reporter{Root: w.cfg.Root, Agent: w.cfg.Agent, Host: w.cfg.Host,
		Signer: w.cfg.Signer, Post: post, Now: w.cfg.Now}
}

// bounce reports to m's sender, from the watcher's loop, that m reached
// the final bad state for the agent (guard set: refused by it).
//
// A remote watcher (ClaimDirs set) does not: the bridge's claims
// folders take no report mark from it, and the bridge's own sweep
// (bridge.Reports) reports the refusal or failure after its grace.
func (w *watcher) bounce(m *channel.Message, state, guard, reason string) {
	if w.cfg.ClaimDirs != nil {
		return
	}
	r := delivery.Report{Agent: w.cfg.Agent, State: state, Guard: guard, Reason: reason}
	id, err := w.reporter(w.postFile).Send(m, r)
	switch {
	case err != nil:
		w.log.Error("cannot send a delivery report", keyMsg, m.ID, keyChannel, m.SessionID, keyErr, err)
	case id != "":
		w.dirty = true
		w.log.Info("delivery report", keyMsg, m.ID, keyChannel, m.SessionID, keyReply, id, keyReason, state)
	}
}

// newSweeper is the watcher's delivery.Sweeper, for the janitor's
// goroutine: it posts with the channel writer (safe for concurrent use).
func (w *watcher) newSweeper() *delivery.Sweeper {
	post := w.writer.Post
	if w.cfg.writeMessage != nil {
		post = w.cfg.writeMessage
	}
	_, grace, window := w.bounceSettings()
	return &delivery.Sweeper{Reporter: w.reporter(post), Verifier: w.cfg.Verifier, Host: w.cfg.Host,
		Grace: grace, Window: window,
		Log: func(msg string, m *channel.Message, report string, err error) {
			if err != nil {
				w.log.Warn(msg, keyMsg, m.ID, keyChannel, m.SessionID, keyErr, err)
				return
			}
			w.log.Info(msg, keyMsg, m.ID, keyChannel, m.SessionID, keyReply, report)
		}}
}
