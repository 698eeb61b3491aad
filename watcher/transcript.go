package watcher

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/prompt"
)

// recent keeps the last messages the watcher read in each channel, in
// channel order (name time, JSON time, name), so that a prompt's
// transcript is built without listing the folder before the CLI starts.
// It is trusted only for messages named after the watcher started (what
// came before, or arrives late from a writer with a slow clock, it may not
// have read): when it holds fewer than the wanted messages of that kind
// before one, the caller reads the folder (channel.Recent) instead. It is
// owned by the loop goroutine.
type recent struct {
	keep  int
	since time.Time              // only names after this are trusted
	msgs  map[string][]recentMsg // channel → oldest first, at most keep
}

type recentMsg struct {
	m    channel.Message
	name time.Time // the time in the file name
	// cut: m is signed and was cut (prompt.CutMessage), so its signature
	// no longer checks; a prompt that shows it reads it whole from its
	// file, to show its verdict.
	cut bool
}

// newRecent keeps twice context messages per channel, trusting those named
// after started.
func newRecent(context int, started time.Time) *recent {
	return &recent{keep: 2 * max(context, 0), since: started.Truncate(time.Second), msgs: make(map[string][]recentMsg)}
}

func compareRecent(a, b *recentMsg) int {
	return cmp.Or(a.name.Compare(b.name), a.m.Time().Compare(b.m.Time()), strings.Compare(a.m.File, b.m.File))
}

// add records a message read from channel ch.
func (r *recent) add(ch string, m *channel.Message) {
	if r.keep == 0 {
		return
	}
	n, err := channel.ParseName(m.File)
	if err != nil || !n.Time.After(r.since) {
		return // never trusted: not worth keeping
	}
	// Only what a prompt's context shows is kept, not the whole body.
	e := recentMsg{m: prompt.CutMessage(*m), name: n.Time}
	e.cut = m.Signature != nil && (len(e.m.Content.Text) != len(m.Content.Text) ||
		m.Content.Code != nil && len(*e.m.Content.Code) != len(*m.Content.Code))
	list := r.msgs[ch]
	i, found := slices.BinarySearchFunc(list, &e, func(x recentMsg, t *recentMsg) int { return compareRecent(&x, t) })
	if found {
		return
	}
	if len(list) >= r.keep && i == 0 {
		return // older than everything kept
	}
	list = slices.Insert(list, i, e)
	if len(list) > r.keep {
		list[0] = recentMsg{} // let the message go
		list = list[1:]
	}
	r.msgs[ch] = list
}

// before returns the n messages of channel ch just before m, oldest first,
// and whether it held that many (or n is 0) whole enough to be checked.
func (r *recent) before(ch string, m *channel.Message, n int) ([]channel.Message, bool) {
	if n <= 0 {
		return nil, true
	}
	nm, err := channel.ParseName(m.File)
	if err != nil {
		return nil, false
	}
	self := recentMsg{m: *m, name: nm.Time}
	list := r.msgs[ch]
	i, _ := slices.BinarySearchFunc(list, &self, func(x recentMsg, t *recentMsg) int { return compareRecent(&x, t) })
	if i < n || !list[i-n].name.After(r.since) {
		return nil, false
	}
	out := make([]channel.Message, 0, n)
	for _, e := range list[i-n : i] {
		if e.cut {
			return nil, false
		}
		out = append(out, e.m)
	}
	return out, true
}
