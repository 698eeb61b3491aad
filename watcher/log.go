package watcher

import "time"

// Log attribute keys. The keys that name the same thing in other packages
// have the same names there: msg_id (never msg), channel, from, reply_id,
// job_id, err, file.
const (
	keyMsg     = "msg_id"
	keyChannel = "channel"
	keyFrom    = "from"
	keyReply   = "reply_id"
	keyJob     = "job_id"
	keyErr     = "err"
	keyFile    = "file"

	keyReason   = "reason"
	keyDur      = "duration"
	keyHops     = "hops"
	keyOwner    = "owner"
	keyStderr   = "stderr"
	keySession  = "session"
	keyAllow    = "allow"
	keyGuard    = "guard"
	keyThread   = "thread"
	keyQueue    = "queue"
	keyRate     = "rate"
	keyCLI      = "cli"
	keyBudget   = "budget_usd"
	keySpent    = "spent_usd"
	keyTokens   = "tokens"
	keyModel    = "model"
	keyMaxTok   = "budget_tokens"
	keyCost     = "cost_usd"
	keyCount    = "count"
	keyMessages = "messages" // message ids
	keyWaiting  = "waiting"
	keyAttempts = "attempts"
	keyNext     = "next"
	keyWaited   = "waited"
	keyTaken    = "taken"
	keyFresh    = "token_fresh"
	keyOutbox   = "outbox"
	keyOutErr   = "outbox_err"
	keyAge      = "older_than"
	keyDropped  = "dropped"
	keyGrace    = "grace"
	keyTakeover = "takeovers"
	keyVerdict  = "verdict"
	keyTrust    = "trust"
	keyAsker    = "asker"

	keyChannels   = "channels"
	keyPending    = "pending"
	keyResumed    = "resumed"
	keyRecovering = "recovering"
	keyRescanFrom = "rescan_from"
	keyWindow     = "window"
	keyHandled    = "handled"
	keyFailed     = "failed"
	keyPID        = "pid"
	keyHost       = "host"
	keyPGID       = "pgid"
)

// logOnce logs a warning at most once a minute per key, so a lasting
// failure (an NFS server away) does not flood the log.
func (w *watcher) logOnce(key, msg string, args ...any) {
	now := w.now()
	if at, ok := w.errLogged[key]; ok && now.Sub(at) < time.Minute {
		return
	}
	w.errLogged[key] = now
	w.log.Warn(msg, args...)
}
