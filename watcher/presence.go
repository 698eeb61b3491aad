package watcher

import (
	"errors"
	"os"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/presence"
)

// setPresence writes the agent's heartbeat. what is presence.SubIdle or
// presence.SubWorking (with the message id), or presence.StateOffline.
func (w *watcher) setPresence(what, msgID string) {
	if err := w.writePresence(w.status(what, msgID)); err != nil {
		w.logOnce("presence", "cannot write presence", keyErr, err)
	}
}

// noteOtherWatcher warns, at start and at each heartbeat, when the
// presence file shows another watcher of the agent alive on this host
// (each overwrites the other's presence), and remembers it: a watcher
// that stops while the other runs does not write OFFLINE.
func (w *watcher) noteOtherWatcher() {
	s, err := presence.Read(w.cfg.Root, w.cfg.Agent)
	if err != nil || s.Host != w.cfg.Host || s.WatcherPID == os.Getpid() || s.WatcherPID == w.other ||
		!strings.EqualFold(s.State, presence.StateAwake) || !proc.PIDAlive(s.WatcherPID) {
		return
	}
	w.other = s.WatcherPID
	w.log.Warn("another watcher of this agent is running on this host", keyPID, s.WatcherPID, keyHost, s.Host)
}

// presenceMine reports whether the presence file is this watcher's own
// (same host and pid), or there is none: only then may it say OFFLINE,
// for another watcher of the agent may have written it and still run.
func (w *watcher) presenceMine() bool {
	s, err := presence.Read(w.cfg.Root, w.cfg.Agent)
	if err != nil {
		return true
	}
	return s.Host == w.cfg.Host && s.WatcherPID == os.Getpid()
}

// writePresence writes and publishes s. It touches no watcher state, so a
// job's goroutine may call it.
func (w *watcher) writePresence(s presence.Status) error {
	s.Sign(w.cfg.Signer)
	err := presence.Write(w.cfg.Root, s)
	if w.cfg.Publisher != nil {
		w.cfg.Publisher.PublishPresence(s) // logged and counted by the publisher
	}
	return err
}

// status is the agent's presence as the loop sees it now.
func (w *watcher) status(what, msgID string) presence.Status {
	s := presence.Status{
		AgentID:    w.cfg.Agent,
		Timestamp:  presence.FormatTime(w.now()),
		State:      presence.StateAwake,
		Substate:   what,
		WatcherPID: os.Getpid(),
		Channel:    w.cfg.Channels[0],
		Host:       w.cfg.Host,
		MessageID:  msgID,
		Started:    presence.FormatTime(w.started),
		Queue:      len(w.queue),
		Counters:   map[string]int64{"handled": int64(w.handled), "failed": int64(w.failed)},
		Instance:   w.instance,
	}
	if n := len(w.outbox.entries); n > 0 {
		s.Counters["outbox"] = int64(n) // replies waiting to be posted
	}
	if what == presence.StateOffline {
		s.State, s.Substate = presence.StateOffline, ""
	}
	if len(w.cfg.Channels) > 1 {
		s.Channels = w.cfg.Channels
	}
	if !w.lastReply.IsZero() {
		s.LastReply = w.lastReplyID
	}
	s.Backlog, s.OldestUnanswered = w.backlog()
	if r, ok := w.cfg.Live.(LiveReporter); ok && s.State == presence.StateAwake {
		s.Live = r.Live()
	}
	return s
}

// LiveReporter is a LiveRunner that reports its warm processes and their
// memory (internal/agent/live's Pool), for the heartbeat's live field. Its
// Live must not wait long: the loop calls it at each change of state.
type LiveReporter interface {
	Live() *presence.Live
}

// heartbeat refreshes presence and the running job's claim.
func (w *watcher) heartbeat() {
	w.checkKill()
	w.noteOtherWatcher()
	if w.busy == nil {
		w.idle()
		return
	}
	sub := presence.SubWorking
	if w.busy.asking != nil {
		sub = presence.SubWaiting // its turn waits for an answer
	}
	w.setPresence(sub, w.busy.it.msg.ID)
	w.refreshClaim()
}

// refreshClaim refreshes the running job's claim, and stops the job if
// the claim was taken over.
func (w *watcher) refreshClaim() {
	m := &w.busy.it.msg
	err := w.claims.Heartbeat(m.SessionID, m.Key())
	switch {
	case errors.Is(err, claim.ErrLost):
		// Judged gone and taken over (a long stall, a cut-off host):
		// the new owner answers; stop spending on a reply it will post.
		if !w.busy.lost {
			w.log.Warn("claim taken over; stopping the CLI", keyMsg, m.ID, keyErr, err)
			w.busy.lost = true
			w.busy.stop()
		}
	case err != nil:
		w.logOnce("claim-heartbeat", "cannot refresh the claim", keyMsg, m.ID, keyErr, err)
	}
}

// idle writes the presence of a watcher with no CLI running.
func (w *watcher) idle() {
	switch {
	case w.overBudget(w.now()) != "":
		w.setPresence(presence.SubThrottled, "")
	case len(w.awaiting) > 0:
		w.setPresence(presence.SubWaiting, "")
	default:
		w.setPresence(presence.SubIdle, "")
	}
}

// backlog counts the messages the watcher holds unanswered (queued, and
// the one its CLI works on) and gives the time of the oldest.
func (w *watcher) backlog() (n int, oldest string) {
	var first time.Time
	note := func(m *channel.Message) {
		n++
		if t := m.Time(); !t.IsZero() && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	for _, it := range w.queue {
		note(&it.msg)
	}
	if w.busy != nil {
		note(&w.busy.it.msg)
	}
	if !first.IsZero() {
		oldest = presence.FormatTime(first)
	}
	return n, oldest
}
