// Package remote is the client of a host without the shared tree: it
// does every write through a bridge (package bridge: NATS request/reply,
// collab.bridge.v1.OP.AGENT) and reads new messages from the CHAT stream.
// The files on the mount stay the one truth; this package only keeps a
// remote host's own state.
//
// # Identity
//
// A [Client] acts as one agent. Its requests go out on that agent's
// subjects and its replies come back on the inbox prefix
// _INBOX.collab.AGENT ([bridge.InboxPrefix]), so a NATS account can allow
// an agent's user its own subjects only. Every message it posts is signed
// with the agent's key before it leaves the host (the bridge never signs
// for anyone and refuses what does not verify).
//
// # Local state
//
// A remote host keeps its agent's state under a state directory, by
// default $XDG_STATE_HOME/collab/remote/AGENT (~/.local/state/... when the
// variable is unset; see [DefaultStateDir]):
//
//	STATE/outbox/NANOS-OP-RANDOM.json          a write not yet acknowledged
//	STATE/outbox/failed/NANOS-OP-RANDOM.json   a write the bridge refused
//	STATE/inbox/CHANNEL.json                   the inbox cursor of a channel
//
// An entry is one JSON object {"op": OP, "body": BODY, "queued": TIME}
// where BODY is the request exactly as sent (for a post, the signed
// message with its id already chosen); an entry in failed/ adds
// "refused": the bridge's code and text. NANOS is the time it was queued
// in nanoseconds, 20 digits, so names sort oldest first.
//
// An inbox cursor ([InboxDir], rewritten atomically) is the mounted
// inbox's kind, a [channel.Cursor]: the names of the messages acknowledged
// plus a floor trailing the newest of them by [channel.DefaultSkewWindow],
// below which everything is. A message named before one acknowledged that
// reaches the mount later (its writer's clock behind) is still unread
// ([Client.Unread]) unless it is named below the floor. Two processes of
// one agent acknowledging at once may overwrite each other's cursor: a
// message is then shown again, never lost.
//
// # Guarantees
//
//   - A write (post, kill) is published in the outbox atomically (temp
//     file, fsync, no-replace link, directory fsync) BEFORE it is sent, and
//     removed only after the bridge answered "ok". A process killed
//     between the two leaves the entry, and the next [Client.Flush] sends
//     it.
//   - Resending is safe: a post carries its message id, and the bridge
//     answers a post whose file exists with the same message "ok"
//     ("existed"), so a message sent twice is one file.
//   - No reply (no bridge: no responders, or a timeout) or a retryable
//     refusal (unavailable, internal) keeps the entry; the error wraps
//     [ErrQueued]. A refusal that must not be retried (invalid, forbidden,
//     conflict, not-found) moves the entry to failed/, never deleting it
//     silently, and the error wraps the [*bridge.Error].
//   - A post refused as a conflict (another message already has its id;
//     an agent has 65,536 names a second, so a fast sender can clash) is
//     sealed again under a new id and sent again, at most 10 times: the
//     new entry is published before the old one is removed (a crash in
//     between sends both: a copy, never a loss).
//   - [Client.Flush] resends the outbox oldest first and stops at the first
//     entry that stays queued (the bridge is unreachable: the rest would
//     fail too, and the order is kept), within [FlushBudget].
//   - Presence is not queued: a heartbeat sent late would replace a newer
//     one. A failed [Client.Presence] is an error and the next heartbeat
//     is the retry.
//   - Documents ([Client.Doc]) and task events ([Client.TaskEvent]) are
//     not queued either: an append or a versioned write sent late could
//     land on a newer document, and a task event is made (and signed) for
//     the task's state at the time. With no bridge they fail, wrapping
//     [ErrUnreachable], and nothing is written. A task event is signed
//     here with the agent's key for the task's next event number; when
//     another event took that number first the client signs it again for
//     the next one.
//
// # Reading
//
// [Client.Read] pages through a channel with the bridge's read op.
// [Client.Follow] reads new messages of a channel from the CHAT stream
// with direct gets (by sequence, in batches: no consumer, nothing of the
// agent's on the server) from a start time, woken by a core NATS
// subscription to the channel's subject, and drops ids it has
// delivered (the stream and the bridge's publisher may both repeat a
// message). What the stream no longer holds (its retention is a limit;
// the files have none) is read with [Client.Read].
package remote
