// Package delivery says where a message stands for each agent it is
// addressed to: the one owner of "what state is message M in for
// addressee A". collab status, send --wait and the MCP tool
// message_status all call [Of] or [For].
//
// # Addressees
//
// A message is for the agent it is sent to (to), every agent it
// @mentions, and a known agent (registry entry or presence file) whose
// name is the first word of its first line: the rules of
// [channel.Message.IsFor]. A message to "all" that names no one is a
// broadcast: it has no addressee, and no state. In the channel of a
// workflow instance an agent of the instance is also named by its NAME
// (@reviewer is reviewer--pr-123; [workflow.Aliases], read from the
// instance records: package workflow's "Aliases"); elsewhere only by its
// id.
//
// # States
//
// Each addressee's state is derived from files every host sees, never
// from one watcher's memory:
//
//	waiting        no watcher has noticed it yet (with how long, and the
//	               agent's presence)
//	seen           a watcher noticed and queued it (the seen file)
//	claimed        a watcher claimed it (owner's host, pid and instance,
//	               since when)
//	running        its CLI runs (the job record's id)
//	answered       the reply is posted (reply id, latency), or the model
//	               chose not to answer (claim skipped, no guard)
//	refused        a guard stopped it: max-hops, pair-rate (the claim's
//	               note, [RefusalNote]) or trust (the seen file's guard)
//	failed         the CLI failed or the job was killed (the claim's note)
//	undeliverable  no claim, no seen file, and the agent has neither a
//	               registry entry nor a presence file (with a Verifier,
//	               a forged registry entry does not count:
//	               registry.KnownTo)
//
// Refused, failed and undeliverable are the final bad states ([Bad]);
// answered too is final ([Final]).
//
// # Files
//
// Besides claims and reply tokens (package claim) a watcher writes, for
// agent A and message M of channel C,
//
//	ROOT/claims/C/A/M.seen
//
// when it queues M (or refuses it by trust before any claim): JSON with
// message, channel, agent, host, pid, instance, time (RFC 3339) and, when a
// guard refused the message before any claim, guard and why. It is
// published without replacing (the first watcher to notice M writes it;
// no one rewrites it). A watcher with a key signs it (package signing,
// kind "seen") over, in this order: channel, agent, message, host, pid
// (decimal), instance, time (Go's RFC3339Nano in UTC), guard, why, then,
// only when either is set (a file of an older version has neither),
// visible (RFC3339Nano, UTC) and via: when the watcher's scan read the
// message and what woke it (poll, fsnotify, nats). With a Verifier, a
// seen file that does not verify as the agent's while the agent has keys
// is ignored. A sender's send --wait writes ROOT/claims/C/S/M.awaited
// once it has the reply ([KindAwaited]); [TimelineFor] reads these, the
// claim, the job and the reply into a message's timeline per addressee.
//
// # Cost
//
// The state of one message for one agent reads a handful of files: the
// seen file, the claim's generations and reply tokens, the reply (by its
// id), the agent's presence and registry entry, and, for a working or
// failed claim, the agent's job records (bounded by jobs.Keep plus those
// running), plus the instance records (ROOT/workflows) for the channel's
// aliases. Never the channel's history.
package delivery
