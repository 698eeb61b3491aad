package watcher

import (
	"fmt"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/presence"
)

// maxUnpriced bounds the models warned about for having no price.
const maxUnpriced = 256

// spend adds a run's cost and tokens to the day's budget. A run that
// reports tokens but no cost is priced from Config.Prices, and its
// CostUSD set to that price; a model the table does not know is warned
// about once and counts against the token budget only.
func (w *watcher) spend(resp *modelcli.Response, now time.Time) {
	day := now.Format(time.DateOnly)
	if w.budget.Day != day {
		w.budget = budget{Day: day}
	}
	if resp == nil {
		return
	}
	if resp.CostUSD <= 0 && resp.Usage.Tokens() > 0 {
		if usd, ok := w.cfg.Prices.Cost(resp.Usage); ok {
			resp.CostUSD = usd
		} else if w.cfg.BudgetUSD > 0 && !w.unpriced[resp.Usage.Model] && len(w.unpriced) < maxUnpriced {
			if w.unpriced == nil {
				w.unpriced = make(map[string]bool)
			}
			w.unpriced[resp.Usage.Model] = true
			w.log.Warn("no price for the model: its tokens count against the token budget only (add it with --prices)", keyModel, resp.Usage.Model)
		}
	}
	if resp.CostUSD > 0 {
		w.budget.Spent += resp.CostUSD
		w.dirty = true
	}
	if n := resp.Usage.Tokens(); n > 0 {
		w.budget.Tokens += n
		w.dirty = true
	}
}

// overBudget says which of the day's budgets is spent, if any: "" when
// neither is.
func (w *watcher) overBudget(now time.Time) string {
	if w.budget.Day != now.Format(time.DateOnly) {
		return ""
	}
	switch {
	case w.cfg.BudgetUSD > 0 && w.budget.Spent >= w.cfg.BudgetUSD:
		return fmt.Sprintf("%.2f of %.2f USD", w.budget.Spent, w.cfg.BudgetUSD)
	case w.cfg.BudgetTokens > 0 && w.budget.Tokens >= w.cfg.BudgetTokens:
		return fmt.Sprintf("%d of %d tokens", w.budget.Tokens, w.cfg.BudgetTokens)
	}
	return ""
}

// throttled reports whether the day's budget (in USD or in tokens) is
// spent. The first time in a day it logs, posts one notice to the first
// channel and shows THROTTLED presence; messages stay queued until the
// next UTC day.
func (w *watcher) throttled(now time.Time) bool {
	if w.cfg.BudgetUSD <= 0 && w.cfg.BudgetTokens <= 0 {
		return false
	}
	w.spend(nil, now)
	spent := w.overBudget(now)
	if spent == "" {
		return false
	}
	if !w.budget.Noticed {
		w.budget.Noticed = true
		w.dirty = true
		w.log.Warn("daily budget spent; messages wait until the next UTC day", keySpent, w.budget.Spent, keyBudget, w.cfg.BudgetUSD,
			keyTokens, w.budget.Tokens, keyMaxTok, w.cfg.BudgetTokens, keyQueue, len(w.queue))
		w.postBudgetNotice(spent)
		w.setPresence(presence.SubThrottled, "")
	}
	return true
}

// postBudgetNotice posts the day's notice that the budget is spent, to
// the first channel.
func (w *watcher) postBudgetNotice(spent string) {
	// A notice of the watcher, not of a thread: in reply to nothing.
	notice := channel.Message{
		SessionID: w.cfg.Channels[0],
		From:      w.cfg.Agent,
		Metadata:  channel.Metadata{Mode: channel.ModeWatcher, Turn: w.cfg.Agent, Host: w.cfg.Host},
	}
	setNotice(&notice, "budget", fmt.Sprintf("[collab] %s has spent its budget for %s (%s); messages wait until 00:00 UTC.",
		w.cfg.Agent, w.budget.Day, spent))
	if err := w.postFile(&notice); err != nil {
		w.log.Error("cannot post the budget notice", keyErr, err)
	}
}
