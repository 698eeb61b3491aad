package watcher

// Dispatch: claiming the next message, starting its run, and closing
// its claim.

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
)

// dispatch starts the next CLI run if none is running.
func (w *watcher) dispatch(jobCtx context.Context) {
	defer w.noteBacklog()
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
	// The claims folder answers again (for a remote watcher: the bridge
	// is back): replies waiting in the outbox go now, not when a back-off
	// grown while it was away (up to 32 polls) runs out.
	w.outbox.next = time.Time{}
	w.log.Info("claimed", keyMsg, m.ID, keyChannel, m.SessionID, keyFrom, m.From, keyTakeover, c.Takeovers)
	w.count(telemetry.StateClaimed)
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
	w.endHop(it, status, reply, note)
}
