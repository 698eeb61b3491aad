// Package watcher is collab's agent daemon: it notices messages addressed to
// one agent in its channels, runs the agent's model CLI on each, and posts
// the reply (SPEC §3, §4, §7).
//
// # The loop
//
// One goroutine owns all state. It polls every channel (polling is the
// truth: on NFS no notification sees other hosts' writes); [Waker]s such as
// fsnotify only make the next poll sooner and are never required. Messages
// for the agent are queued and handled one at a time, oldest first, each in
// a goroutine of its own while the loop keeps the heartbeat going.
//
// # Exactly one reply
//
// Before running the CLI the watcher claims the message (package claim); a
// second watcher of the same agent, on any host, sees the claim and leaves
// the message alone unless the claim's owner is gone, in which case it takes
// the claim over. Before posting, the watcher reserves the reply's id with a
// no-replace token, so at most one reply per message can ever be posted.
//
// The claim is all that is written before the CLI starts (the prompt's
// transcript comes from the messages the watcher has read, when it holds
// enough of them); the job record, WORKING presence and the state file are
// written as the CLI starts, so a crash in between leaves a claim whose
// owner is dead, which the restarted watcher takes over.
//
// # Restarts
//
// The watcher keeps its cursors and the messages it has not yet handled in
// ROOT/state/AGENT/watch.json. The first start begins at "now" (history is
// not answered unless a replay is asked for); a restart resumes where the
// last run stopped, so what arrived meanwhile is answered, once.
//
// # Runaway guards
//
// Replies carry metadata.hops, one more than the message they answer. A
// message whose hops reach MaxHops is not answered; the watcher runs the CLI
// at most Rate times a minute (further messages wait); and in agent chains
// (hops ≥ 1) it answers one sender at most PairRate times a minute. When a
// guard stops a message, the watcher logs it and posts at most one short
// notice per thread, to "all", which wakes no one.
//
// # Shutdown
//
// When ctx is cancelled the watcher takes nothing new, lets a running CLI
// finish for up to Grace (posting its reply), then kills it, writes OFFLINE
// presence and returns.
package watcher
