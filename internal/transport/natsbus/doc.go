// Package natsbus carries collab's messages and heartbeats over NATS as
// hints (docs/protocol.md#nats). The files in the shared tree stay the source of truth:
// NATS only makes delivery sooner, and NATS down means slower, never lost.
// nats.go is used in this package only: the bridge and the remote client
// that build on it take a [Conn] ([Bus.Conn]) and use its small API for
// the rest: [Request] and [ServeQueue] (request/reply in a queue group),
// [Reader] (the stream's direct gets and their hints), and the errors
// callers act on ([ErrMaxPayload], [ErrNoResponders]).
//
// # Subjects
//
//	collab.chat.CHANNEL     one message per publish: the file's JSON, with
//	                        header Nats-Msg-Id set to the message id
//	collab.presence.AGENT   one heartbeat per publish: the presence JSON
//	collab.jobs.kill.AGENT  a kill request: {"job": JOB, "by": …, "host": …},
//	                        published by collab jobs kill after the kill file
//
// The message id is the file's name without ".json", which is the JSON id
// for everything collab writes. CHANNEL and AGENT are valid tree names
// (letters, digits, '_' and '-'), so they are always one subject token.
//
// # Servers
//
// [Options.URL] names one server or several, comma-separated (a cluster's
// nodes): [ParseURLs] is the one parser of that list, called by [Connect],
// which every NATS client of collab goes through. The Bus reconnects
// forever, to any server of the list or that the cluster advertised; its
// subscriptions are made again there and its subscribers told to poll.
// collab keeps no consumer on the server (remote hosts read the stream
// with direct gets, any replica answering), so nothing has to resume.
// [Bus.InitStream] sets the stream's replicas (Replicas; up to
// [MaxReplicas]) and [Bus.StreamStatus] shows its leader and followers.
//
// # Publishing
//
// [Bus.PublishMessage] is called after the message's file is in place. When
// a JetStream stream named CHAT exists (see [Bus.InitStream]), the message is
// published to it and the server's ack is awaited for at most
// [Options.PublishTimeout]; the stream drops a second copy with the same
// Nats-Msg-Id within its duplicate window. Otherwise the message goes out
// on core NATS, which is at-most-once. Whether the stream exists is checked
// at connect, on every reconnect, every minute, and whenever a JetStream
// publish finds no stream. On a cluster, a publish made while the stream
// elects a new leader (no one answers, but the stream is there) fails,
// and is not sent on core NATS, where the stream would not store it.
//
// A failed publish is counted ([Bus.Stats]), logged, and returned; it is
// never retried. The reconnect buffer is off: while the connection is down
// a publish fails at once instead of being kept and sent later, possibly
// long after its file was handled.
//
// # Receiving
//
// [Bus.Subscribe] decodes the messages of some channels as they are
// published. [Waker] is a watcher wake source built on it: it wakes the
// watcher on every message and after every reconnect (messages published
// during an outage are found by polling the files), and hands the decoded
// message to an optional callback, so the watcher can read the announced
// file at once and report one that never appears.
//
// [Bus.SubscribeKills] delivers the job ids of kill requests for one agent,
// so its watcher looks at the kill file at once; the file stays the
// request, and one that is not there is not acted on.
//
// # Reading the stream without a consumer
//
// [Bus.InitStream] makes the stream allow direct gets (allow_direct).
// [DirectBatch] reads it by sequence or start time, one subject, in
// batches (nats-server 2.11+), with a request on [DirectGetSubject] and
// nothing made on the server; [DirectInfo] is the stream's info, failing
// with [ErrNoDirect] when direct gets are off. Remote hosts read the
// stream this way, so their users need no consumer API (package remote,
// deploy/nats/accounts.conf). On a replicated stream a direct get may be
// answered by a follower a moment behind the leader.
//
// # Parity
//
// [Bus.StreamIDs] lists the ids the stream holds for a channel, [FileIDs]
// the ids in the channel's folder, and [Parity] compares them. Both sides
// go by the time in the id, so a writer's clock and the server's agree on
// which messages count.
//
// # Caveats
//
//   - Core NATS delivers only to subscribers connected at the time: a
//     watcher that was disconnected finds those messages by polling.
//   - The stream deduplicates only within its duplicate window (default 2
//     minutes); a copy published later is stored twice. Receivers dedupe by
//     id in any case.
//   - A JetStream ack means the server stored the message, not that it was
//     synced to disk (sync_interval defaults to 2 minutes).
//   - A publish whose ack timed out may still have been stored: it is
//     counted as failed, and parity shows it present.
//   - A message larger than the server's max_payload (1 MiB by default,
//     which a message at collab's own size limit plus its header exceeds)
//     is not published; its file is delivered by polling as usual.
//   - Anyone allowed to publish on collab.chat.> can announce messages that
//     do not exist; that is why the file stays the truth.
package natsbus
