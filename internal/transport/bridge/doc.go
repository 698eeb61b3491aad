// Package bridge serves the shared tree's operations over NATS
// request/reply, for hosts that cannot mount the tree (docs/remote.md, "Hosts
// without the mount"). A bridge runs on a host that has the mount and
// performs every request on the files with the same code the local
// commands use, so the files stay the one truth (docs/protocol.md#nats) and several
// bridges on several hosts are safe together: the no-replace writes decide
// every race. This comment is the protocol (v1); it extends the contract.
//
// # Subjects
//
//	collab.bridge.v1.OP.AGENT   a request; OP one of post, presence, read,
//	                            who, status, kill, claimfs, keys, kills,
//	                            doc, task;
//	                            AGENT the acting agent (a valid tree name)
//	collab.chat.CHANNEL         every message that lands in a channel, on
//	                            the JetStream stream CHAT (see natsbus)
//	collab.presence.AGENT       heartbeats (see natsbus)
//
// Bridges subscribe collab.bridge.v1.*.* in the queue group
// "collab-bridge": each request is served by one of them. A remote agent's
// client uses the reply inbox prefix _INBOX.collab.AGENT, so NATS
// permissions can let AGENT's user publish only collab.bridge.v1.*.AGENT
// and receive only under its own inbox (deploy/nats/accounts.conf).
//
// # Requests and replies
//
// A request body is one JSON object (empty: {}); unknown fields are
// refused. A reply is one JSON object: on success {"ok": true, ...} with
// the op's fields, on failure {"ok": false, "code": CODE, "error": TEXT}.
//
//	post      {"channel": C, "message": MESSAGE}
//	          -> {"ok": true, "id": ID, "existed": bool}
//	presence  {"presence": STATUS} -> {"ok": true}
//	read      {"channel": C, "after": ID or "", "limit": N}
//	          or {"channel": C, "since": ID or TIME, "limit": N}
//	          -> {"ok": true, "messages": [MESSAGE or OMITTED...], "more": bool}
//	who       {} -> {"ok": true, "agents": [...]}
//	status    {"message": ID} -> {"ok": true, "status": {...}}
//	kill      {"of": AGENT2, "job": JOB, "kill": KILL} -> {"ok": true}
//	claimfs   {"channel": C, "op": OP2, "name": NAME, "data": BYTES, "limit": N}
//	          -> {"ok": true, "data": BYTES, "size": N, "mod_time": T, "mode": M}
//	keys      {} -> {"ok": true, "keys": {"AGENT.json": FILE...}, "more": bool}
//	kills     {"jobs": [JOB...]} -> {"ok": true, "kills": {JOB: KILL...}}
//	doc       {"action": A, "channel": C, ...}: a channel's documents (docs.go)
//	task      {"action": A, "channel": C, ...}: the task board; events signed by AGENT (tasks.go)
//
// MESSAGE, STATUS and KILL are the JSON of the file the request
// writes, exactly as it would be on the mount, signed by AGENT's key
// (docs/protocol.md#signatures). The bridge never signs for anyone: it
// decodes the file with the owning package's decoder, requires that it is
// AGENT's (a message's from and a presence's or kill's agent or asker is
// AGENT; a message's session_id is C) and that its signature is Verified
// against the keyring; then it publishes the file with that package's
// no-replace write. Of a message it writes only what AGENT signed: fields
// outside its signature (a host, needs_input, unknown members) are kept
// only under its extras signature (channel.Message.StripUnsigned), and
// the bridge adds nothing but the defaults any writer fills in.
//
// post is idempotent: when the message's file exists with the same
// message, the reply is ok with "existed": true; a different message under
// that id is a conflict. A client may therefore resend a post until it
// gets a reply.
//
// keys and kills serve a remote host's mirror (see keys.go): the files of
// ROOT/keys, and the kill files of AGENT's own jobs.
//
// read returns the messages after ID ("more": later ones follow), or,
// when "after" is empty, the newest N (after "since" when given: a message
// id or ISO-8601 time, as MCP's channel_read takes it; "more": older ones
// were left out, a reply cut for size keeping the newest), each with the id of its file (over a foreign writer's own "id"), in the
// channel's order, at most N (default 50, at most 500), at bounded
// cost. A reply never exceeds the bridge's maximum reply size: it stops
// early with "more": true, and a single message too big for any reply is
// returned as OMITTED, {"id": ID, "omitted": "N bytes: larger than a bridge
// reply"}.
//
// claimfs is one operation of a claim.Dir (package claim) in AGENT's
// claims folder of C, ROOT/claims/C/AGENT/, for a remote watcher's
// claim.Store: OP2 is publish (no-replace: a taken name is conflict),
// replace, read (at most N bytes, at most 64 KiB) or lstat; a missing file
// is not-found. NAME is exactly one of the names packages claim and
// delivery give that folder's files, M.json, M.N.json, M.reply, M.reply.N
// or M.seen (M a message id, N from 1 to 999 without a leading zero):
// nothing else, so no separator and no other agent's folder; links are
// not followed (package safedir). BYTES (base64) is at most 64 KiB; what
// publish and replace write is decoded with package claim's or delivery's
// types and must be that file (its channel, message, agent and generation)
// signed by AGENT and Verified, else forbidden; only a claim generation is
// ever replaced. The bridge performs each with the safedir call the claim
// package makes on the files, so claims made through any bridges and on
// the mount race safely: the no-replace publish decides.
//
// who and status answer what `collab who --json` and `collab status
// --json MESSAGE` print.
//
// # Error codes
//
//	invalid      a bad request: do not retry
//	forbidden    not AGENT's, or its signature is not verified: do not retry
//	conflict     a different file already has that name: do not retry
//	not-found    no such channel, message or agent
//	unavailable  the tree cannot be written now (ENOSPC, EIO...): retry later
//	internal     the bridge failed otherwise: retry later
//
// A request with no reply (no bridge is listening, or the client's timeout
// passed) may be retried later too; [Retryable] tells a client which.
package bridge
