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
//	expired        still unclaimed (waiting or seen), and a delivery
//	               report said it expired (below); a claim moves it on
//
// Refused, failed, undeliverable and expired are the final bad states
// ([Bad]): no answer will come, or (expired) none is expected any more;
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
// # Delivery reports
//
// When a message's state for an addressee becomes bad, its sender gets
// one delivery report (a "bounce"): a message of type
// channel.TypeDeliveryReport, in the message's channel and thread, in
// reply to it, to its sender, from the agent that decided (signed with
// its key), whose text says what happened ([ReportText]) and whose
// extension channel.ExtDeliveryReport says it for programs ([Report]:
// message, channel, agent, state, guard, reason, decided_by, host). None
// is sent on a report, a guard notice or a question ([Reportable]). No
// watcher answers a report and no waiter takes it for the reply.
//
// Who decides: the watcher that refuses a message by a guard (max-hops,
// pair-rate, trust) or whose job for it fails or is killed (a kill is a
// failure: the sender learns no answer comes, whoever killed it) reports
// at once. A [Sweeper], which every watcher runs every 30 s over its
// channels, reports an addressee undeliverable for a grace (1 min: time
// for another host's registry entry or presence file to show through the
// mount's cache), a message still unclaimed past its expiry, and a
// refusal or failure its decider did not report within the grace.
//
// Expiry is off unless set: per message by its sender, the signed
// extension channel.ExtExpireAfter ("10m"; collab send --expire-after),
// else per channel by its settings file ROOT/channels/C/.settings.json,
// {"expire_after": "10m"} ([ChannelSettings], replaced atomically). Both
// are 1 s to [MaxExpireAfter]. An expired message may still be claimed and
// answered: its status then is answered, and names the report too.
//
// Once only: a report is two steps, each published without replacing.
// First the mark ROOT/claims/C/A/M.report ([ReportMark]: the report,
// the id chosen for its message, the time, signed as kind "report" over
// channel, agent, message, report id, state, guard, reason, decided_by,
// host, time), then the report under that id, dated by the mark. Of
// deciders racing, the first mark stays and the others post under its id;
// a decider killed between the two leaves a mark whose report a later
// Send, or the sweep after the grace, posts under the same id. Two
// messages cannot share an id, so there is never a second report.
// [ReadReport] reads the mark; collab status shows the report's id.
//
// # Cost
//
// The state of one message for one agent reads a handful of files: the
// seen file and the report mark, the claim's generations and reply
// tokens, the reply (by its id), the agent's presence and registry entry, and, for a working or
// failed claim, the agent's job records (bounded by jobs.Keep plus those
// running), plus the instance records (ROOT/workflows) for the channel's
// aliases. Never the channel's history.
package delivery
