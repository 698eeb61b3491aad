package watcher

// Reading the channels: which new messages are the agent's to answer.

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
)

// poll retries the outbox, scans every channel and queues what is for
// the agent, in the order it is answered: by priority (high, normal,
// low; package inbox), then oldest first. Only a poll at the poll interval (or asked for by a wake-up)
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
		return cmp.Or(cmp.Compare(a.rank(), b.rank()), a.msg.Time().Compare(b.msg.Time()), cmp.Compare(a.msg.File, b.msg.File))
	})
}

// scan reads what is new in channel ch: with list, what a listing finds
// when the folder changed; without, the hinted files only.
func (w *watcher) scan(ch string, list bool) {
	scan := w.readers[ch].ScanHinted
	if list {
		scan = w.readers[ch].Scan
	}
	at := w.now()
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
		// What made this scan read the file: the source that named
		// it, else the poll's listing.
		w.woken.sight = delivery.Woken{At: at, Via: cmp.Or(w.woken.viaOf(ch, msgs[i].File), delivery.ViaPoll)}
		w.consider(&msgs[i])
	}
	w.woken.sight = delivery.Woken{}
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
	if _, ok := delivery.MessageExpireAfter(m); ok {
		select { // the sweep learns of its expiry now, not at its next round
		case w.sweepSoon <- struct{}{}:
		default:
		}
	}
	switch {
	case m.From == w.cfg.Agent:
		if m.Metadata.InReplyTo != "" && !m.IsQuestion() && !m.IsDeliveryReport() && w.ownReply(m) {
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
		w.seenQueued()
	}
}

// markSeen records, for every host to see, that the watcher noticed m
// (and, with guard set, refused it before any claim), with when its scan
// read it and what woke the watcher to (the scan's sight): see package
// delivery.
func (w *watcher) markSeen(m *channel.Message, guard, why string) {
	if err := delivery.MarkSeenWoken(w.claimDirs(), m.SessionID, m.Key(), w.claims.Self, w.now(), w.woken.sight, guard, why, w.cfg.Signer); err != nil {
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
