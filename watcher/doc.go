// Package watcher is collab's agent daemon: it notices messages addressed to
// one agent in its channels, runs the agent's model CLI on each, and posts
// the reply (docs/protocol.md#addressing, #presence, #the-model-run).
//
// # The loop
//
// One goroutine owns all state. It polls every channel (polling is the
// truth: on NFS no notification sees other hosts' writes); [Waker]s such as
// fsnotify only make the next poll sooner and are never required. Messages
// for the agent are queued and handled one at a time, high priority first,
// then normal, then low (as the agent's inbox lists them, package inbox),
// each priority oldest first, each in a goroutine of its own while the loop
// keeps the heartbeat going.
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
// # Live sessions
//
// With Config.Live (collab watch --live), a message whose session key is
// not empty runs as the next turn of that key's warm CLI process
// ([LiveRunner]) instead of a process of its own; everything above holds
// the same (the claim, the reply through the outbox, the job record with
// the process's pid, presence, budgets, the turn limit, the guards, the
// timeout, jobs kill: an interrupt through the CLI's protocol). The
// process keeps the conversation, so the prompt of a later turn carries
// only the transcript's messages since the message its last turn
// answered, and that message; after a failed or killed turn, or a session
// that cannot be resumed, the prompt is whole again.
//
// # Delivery you can see
//
// So that any host can tell where a message stands (package delivery,
// collab status), the watcher also records, for each message it queues
// for its agent (or refuses by its trust policy before any claim), a
// seen file, ROOT/claims/CHANNEL/AGENT/MSG.seen (no-replace, signed as
// kind "seen"); a guard that stops a claimed message finishes its claim
// "skipped" with the note "GUARD: why" (delivery.RefusalNote), after
// posting its notice; and its heartbeat carries its backlog (queued plus
// running) and the time of the oldest message in it.
//
// # Replies that cannot be posted
//
// A reply that cannot be posted (a full disk, a lost mount, a permission
// error) is kept in the outbox, ROOT/state/AGENT/outbox/, and tried again at
// each poll, backing off up to 32 polls apart; the next start posts the
// outbox before anything else. Each attempt first looks for a reply already
// posted and posts under the reply token's id, so a retry never makes a
// second reply, even when a failed write had in fact landed. If the outbox
// cannot be written either (the state is on the same full disk), the reply
// is kept in memory, retried the same way, and written to the outbox as
// soon as there is room; it is lost only if the watcher stops before that,
// which it logs as an error. Meanwhile the message's claim stays "working"
// and is not refreshed: after the claim grace another watcher of the agent
// may take it over and run the CLI again, and the reply token still lets
// only one reply through.
//
// # Restarts
//
// The watcher keeps its cursors and the messages it has not yet handled in
// ROOT/state/AGENT/watch.json. The first start begins at "now" (history is
// not answered unless a replay is asked for); a restart resumes where the
// last run stopped, so what arrived meanwhile is answered, once.
//
// watch.json, sessions.json and outbox entries carry a SHA-256 of their
// content. A file that is truncated, bit-flipped or otherwise not what the
// watcher wrote is logged, kept aside as NAME.corrupt-TIMESTAMP, and the
// watcher recovers: it rescans its channels from RecoveryWindow ago
// (default 6 h) and answers every message for the agent that has no
// reply. Claims, reply tokens and the agent's own replies in the channel
// (metadata.in_reply_to) say what was answered, so nothing is answered
// twice. Limits: a message older than the window is not answered; one in
// the window that predates the watcher's first start is (the first-start
// point was in the lost file); the day's budget and which threads got a
// guard notice are forgotten. Files from before checksums load unchecked.
//
// # Orphaned temp files
//
// Every file is written through a dot-prefixed temp file (".NAME.RANDOM.tmp",
// package safedir); a writer that crashes mid-write leaves it behind. The
// watcher's janitor removes such files once they are older than OrphanAge
// (default 36 h, so a write in progress on any host is never disturbed), at
// start and hourly, in the folders the watcher writes to: each channel, the
// agent's claims and reply tokens in ROOT/claims/CHANNEL/AGENT/ (and
// ROOT/claims/CHANNEL/), ROOT/state/AGENT/ with its outbox/ and jobs/, and
// the presence folder. It goes by age, never by name alone.
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
// # Trust
//
// Everything the watcher posts as its agent is signed with Signer. A
// message addressed to the agent is checked against Trust (package
// signing's policies, default known) before it is claimed: one that names
// a sender with a trusted key but does not verify as that sender (under
// signed: any that does not verify) is never acted on; it is logged and
// reported once by a notice that answers it (in_reply_to), to "all", which
// wakes no one. An answer to a permission question grants its rules only
// when it verifies as the asker, unless the asker has no key (said at
// start) or Trust is any. Messages for others are not checked.
//
// # Shutdown
//
// When ctx is cancelled the watcher takes nothing new, lets a running CLI
// finish for up to Grace (posting its reply), then kills it, writes OFFLINE
// presence and returns. Closing Hurry (a second signal) cuts the grace
// short: the CLI's whole process group gets SIGKILL at once, so nothing it
// started is left running. Either way the killed run fails, with no reply.
package watcher
