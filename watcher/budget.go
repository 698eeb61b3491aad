package watcher

import (
	"fmt"
	"time"

	"collab/channel"
	"collab/presence"
)

// spend adds a run's cost to the day's budget.
func (w *watcher) spend(usd float64, now time.Time) {
	day := now.Format(time.DateOnly)
	if w.budget.Day != day {
		w.budget = budget{Day: day}
	}
	if usd > 0 {
		w.budget.Spent += usd
		w.dirty = true
	}
}

// throttled reports whether the day's budget is spent. The first time in a
// day it logs, posts one notice to the first channel and shows THROTTLED
// presence; messages stay queued until the next UTC day.
func (w *watcher) throttled(now time.Time) bool {
	if w.cfg.BudgetUSD <= 0 {
		return false
	}
	w.spend(0, now)
	if w.budget.Spent < w.cfg.BudgetUSD {
		return false
	}
	if !w.budget.Noticed {
		w.budget.Noticed = true
		w.dirty = true
		w.log.Warn("daily budget spent; messages wait until the next UTC day", keySpent, w.budget.Spent, keyBudget, w.cfg.BudgetUSD, keyQueue, len(w.queue))
		w.postBudgetNotice()
		w.setPresence(presence.SubThrottled, "")
	}
	return true
}

// postBudgetNotice posts the day's notice that the budget is spent, to
// the first channel.
func (w *watcher) postBudgetNotice() {
	// A notice of the watcher, not of a thread: in reply to nothing.
	notice := channel.Message{
		SessionID: w.cfg.Channels[0],
		From:      w.cfg.Agent,
		Metadata:  channel.Metadata{Mode: channel.ModeWatcher, Turn: w.cfg.Agent, Host: w.cfg.Host},
	}
	setNotice(&notice, "budget", fmt.Sprintf("[collab] %s has spent its budget for %s (%.2f of %.2f USD); messages wait until 00:00 UTC.",
		w.cfg.Agent, w.budget.Day, w.budget.Spent, w.cfg.BudgetUSD))
	if err := w.postFile(&notice); err != nil {
		w.log.Error("cannot post the budget notice", keyErr, err)
	}
}
