package watcher

import "time"

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
