package watcher

import (
	"fmt"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/delivery"
)

// A guard notice is a message of type noticeType, to "all" (it wakes no
// one), whose extGuard extension names the guard that stopped a thread
// (max-hops, pair-rate) or the watcher (budget).
const (
	noticeType = delivery.NoticeType
	extGuard   = delivery.ExtGuard
)

// isNotice reports whether m is a guard notice or a delivery report: no
// watcher answers either.
func isNotice(m *channel.Message) bool { return delivery.IsNotice(m) || m.IsDeliveryReport() }

// setNotice makes n the notice of guard saying text.
func setNotice(n *channel.Message, guard, text string) {
	n.Type, n.To = noticeType, channel.Broadcast
	n.Content = channel.Content{Text: text}
	n.SetExtension(extGuard, jsonString(guard))
}

// guardStops reports whether a runaway guard stops the claimed item: its
// thread reached the hop limit, or its sender got PairRate replies this
// minute in an agent chain.
func (w *watcher) guardStops(it *item, now time.Time) bool {
	m := &it.msg
	switch {
	case w.cfg.MaxHops > 0 && m.Metadata.Hops >= w.cfg.MaxHops:
		w.stopByGuard(it, "max-hops", fmt.Sprintf("the thread reached the hop limit (%d)", w.cfg.MaxHops))
	case w.cfg.PairRate > 0 && !w.guards.pairAllowed(m.From, m.Metadata.Hops, now):
		w.stopByGuard(it, "pair-rate", fmt.Sprintf("more than %d replies a minute to %s", w.cfg.PairRate, channel.Quote(m.From)))
	default:
		return false
	}
	return true
}

// stopByGuard records that a guard stopped the item and posts at most one
// notice for its thread.
func (w *watcher) stopByGuard(it *item, guard, why string) {
	m := &it.msg
	thread := m.ThreadID()
	w.log.Warn("guard stopped a message", keyMsg, m.ID, keyFrom, m.From, keyGuard, guard, keyHops, m.Metadata.Hops, keyThread, thread)
	// The notice first: whoever learns of the refusal from the claim
	// (collab send --wait) finds the notice already there.
	if w.guards.notice(thread, w.now()) {
		w.dirty = true
		notice := m.Reply(w.cfg.Agent, w.cfg.Host)
		setNotice(&notice, guard, fmt.Sprintf("[collab] %s stopped answering this thread: %s. A person can reply to continue.", w.cfg.Agent, why))
		if err := w.postFile(&notice); err != nil {
			w.log.Error("cannot post a guard notice", keyMsg, m.ID, keyErr, err)
		}
	}
	w.finishClaim(it, claim.Skipped, "", delivery.RefusalNote(guard, why))
	w.bounce(m, delivery.Refused, guard, why)
}

// window counts events in a sliding time window.
type window struct {
	span  time.Duration
	limit int
	times []time.Time // oldest first
}

func newWindow(span time.Duration, limit int) *window { return &window{span: span, limit: limit} }

func (w *window) prune(now time.Time) {
	i := 0
	for i < len(w.times) && now.Sub(w.times[i]) >= w.span {
		i++
	}
	w.times = w.times[i:]
}

// allow reports whether one more event fits now. A limit ≤ 0 allows all.
func (w *window) allow(now time.Time) bool {
	if w.limit <= 0 {
		return true
	}
	w.prune(now)
	return len(w.times) < w.limit
}

func (w *window) add(now time.Time) {
	w.prune(now)
	w.times = append(w.times, now)
}

// guards are the runaway guards: global invocation rate, replies per
// sender in agent chains, and at most one notice per thread.
type guards struct {
	maxHops  int
	rate     *window
	pairSpan time.Duration
	pairCap  int
	pairs    map[string]*window
	noticed  map[string]time.Time // thread → when a notice was posted
}

func newGuards(maxHops, rate, pairCap int) *guards {
	return &guards{
		maxHops:  maxHops,
		rate:     newWindow(time.Minute, rate),
		pairSpan: time.Minute,
		pairCap:  pairCap,
		pairs:    make(map[string]*window),
		noticed:  make(map[string]time.Time),
	}
}

// pairAllowed reports whether another reply to sender fits the per-sender
// cap. Only agent chains count (hops ≥ 1): a person's messages start at 0.
func (g *guards) pairAllowed(sender string, hops int, now time.Time) bool {
	if hops == 0 {
		return true
	}
	w := g.pairs[sender]
	return w == nil || w.allow(now)
}

func (g *guards) replied(sender string, hops int, now time.Time) {
	if hops == 0 || g.pairCap <= 0 {
		return
	}
	w := g.pairs[sender]
	if w == nil {
		w = newWindow(g.pairSpan, g.pairCap)
		g.pairs[sender] = w
	}
	w.add(now)
}

// notice reports whether a notice may be posted for thread, and records it.
func (g *guards) notice(thread string, now time.Time) bool {
	if _, ok := g.noticed[thread]; ok {
		return false
	}
	g.noticed[thread] = now
	// Forget threads quiet for a day: bounded memory, and a thread that
	// comes back after that may get one more notice.
	for t, at := range g.noticed {
		if now.Sub(at) > 24*time.Hour {
			delete(g.noticed, t)
		}
	}
	return true
}
