// Package task is a channel's task board: work items that agents on any
// host add, claim, report on and finish (docs/protocol.md#the-shared-tree, ROOT/tasks/CHANNEL/).
//
// # Files
//
//	ROOT/tasks/C/t7.json          task t7: title, body, dependencies, who added it
//	ROOT/tasks/C/t7/000001.json   its first event
//	ROOT/tasks/C/t7/000002.json   its second event, and so on
//
// Every file is created once with a no-replace publish (package safedir) and
// never changed, renamed or removed. A task's id is "t" and a number: [Board.Add]
// publishes t(N+1).json after the highest task it sees and moves on to the
// next number when that name is taken, so two hosts never get one id.
//
// A task's state is its newest event; no events means pending. An event
// says what happened (claimed, checkpoint, done, failed, released), who did
// it, and the status and owner that follow. A transition publishes the
// event under the next number, and a no-replace publish of one name
// succeeds for exactly one writer, on every host: of many agents claiming
// one pending task, one creates the event and the others find it, read the
// new state and are told "claimed by X" ([ClaimedError]). Every loser
// decides again from the state that won, so no transition is ever made
// from a state that is gone. The events are also the task's log.
//
// The original tool kept tasks/{pending,claimed,completed} and moved files
// between them. A rename replaces its target and may be replayed by an NFS
// client, so two claimers could both believe they won; this layout never
// renames.
//
// # States
//
//	pending  --claim-->       claimed (owner)
//	claimed  --checkpoint-->  claimed        (owner only)
//	claimed  --worktree-->    claimed        (owner only, with a worktree and branch)
//	claimed  --done-->        done           (owner only, with an outcome)
//	claimed  --fail-->        failed         (owner only, with an error)
//	claimed  --release-->     pending        (owner gone; see below)
//	failed   --retry-->       pending        (anyone on the board, with an optional note)
//
// A pending task is ready when every task it depends on is done; only a
// ready task can be claimed. One whose dependency failed is blocked by it
// ([Task.BlockedBy], "pending, blocked by failed t1") until that one is
// retried and done. Done is final; a failed task stays failed until
// someone retries it ([Board.Retry]): anyone may, as anyone may add a
// task, and the "retried" event names (and with a key is signed by) who
// did. A retry keeps the task's events: its checkpoints stay in its
// context, [Task.Attempts] counts its claims, [Task.LastError] keeps the
// failure. A reader older than retries finds the kind unknown and leaves
// the event out: to it the task stays failed.
//
// # Detail
//
// A checkpoint and a done event may carry a structured detail
// ([Event.Detail], "detail"): a JSON object of at most [MaxDetail] bytes,
// kept in its canonical form ([ParseDetail]: compact, keys sorted, numbers
// as written). A done event's is the task's [Task.OutcomeDetail]. The
// context shows them, leaving out one that does not fit rather than
// cutting it.
//
// # Checkpoints
//
// A checkpoint ([Board.Record]) has a type, one of [CheckpointTypes] (seed
// 003's plan, progress, decision, error, recovery and complete; default
// progress), its detail text (the event's summary) and the files it
// changed. Type and files are the event's "type" and "files", on
// checkpoints only; checkpoints written before types have neither and
// read as progress. A complete checkpoint changes no state: done does.
//
// # Worktrees
//
// The owner of a claimed task may record the git worktree and branch it
// works in ([Board.RecordWorktree], collab task claim --worktree): a
// "worktree" event (status claimed, owner unchanged) with "worktree" (an
// absolute path on the event's host) and "branch". The newest such event
// gives [Task.Worktree], [Task.Branch] and [Task.WorktreeHost]; a release
// or a later claim keeps them (the worktree is still there until someone
// removes it). The event says where the worktree was made, not that it
// still exists: git is the truth for that. An owner on a host without the
// mount makes the worktree in its own repository and signs the event
// itself ([WorktreeEvent]); [Board.ApplySigned] publishes it when it is
// exactly the event RecordWorktree writes. A reader older than worktree
// events finds the kind unknown and leaves the event out, as a malformed
// one, so the state it reads is unchanged.
//
// # Context
//
// [Board.Context] gives what an agent needs to resume a task: the task,
// its checkpoints and the outcomes (or errors) of the tasks it depends
// on, cut to a budget of tokens counted as bytes/4 of [Context.Text], the
// prompt-ready form. The body is cut to a quarter of the budget, the
// dependencies' texts share another quarter, and the checkpoints take the
// rest newest first, each whole, until the next does not fit; the older
// ones are left out and counted ("[N older checkpoints left out to fit M
// tokens]"). The newest is always there, shortened if it alone is too
// long; shortened texts end in "[… cut]". The heading (id, title, state)
// is never cut. It reads the task's events and its dependencies' (at most
// [MaxDepends]), never the rest of the board. Events left out of the state
// (see Signatures) are left out of the context.
//
// # Stale claims
//
// A claim whose owner has shown no sign of life for [Board.Grace] (default
// [DefaultGrace]) is released back to pending, with a "released" event that
// says why. The owner is alive while its presence heartbeat (package
// presence) is AWAKE and fresh; otherwise its last sign of life is the later
// of that heartbeat and the task's newest event (a claim or checkpoint).
// Every claim, next and list looks for such claims first, so no daemon is
// needed. An agent that works without a watcher should checkpoint more often
// than the grace period.
//
// # Signatures
//
// An agent with a key signs the events it makes (package signing, kind
// "task-event") over, in this order:
//
//	channel, task id, seq (decimal), event, status, owner, agent, host,
//	time (RFC 3339 in UTC, the fraction's trailing zeros dropped, as Go's
//	RFC3339Nano), summary, outcome, error, note
//
// and, only for a checkpoint with a type or files, a worktree event or an
// event with a detail, then: type, the number of files (decimal), each
// file; only for a worktree event, then: worktree, branch; and only for an
// event with a detail, then: "detail", the detail in its canonical form.
// An event without them has the payload it had before checkpoint types,
// so events signed then still verify.
//
// so an event copied to another task, number or channel does not verify.
// A reader checks every event as its agent's. The rule for one that does
// not verify: under [Board.Trust] "known" (the default), an event in the
// name of an agent that has keys that is unsigned or does not verify as
// that agent's is left out of the task's state, as a malformed event is:
// its number stays taken and it stays in the log, marked, but a forged
// claim is not that agent's claim (the task stays pending and another
// agent may claim it), and a forged done, fail or release changes
// nothing. "signed" leaves out every event that does not verify; "any"
// leaves out none. Events of agents without keys (and the releases a
// sweep makes, by "collab") count as before. Likewise a presence heartbeat
// of a claim's owner that has keys and does not verify is no sign of life.
// The task file itself (title, body, created_by) is not signed.
//
// # Caveats
//
//   - Ages compare the writer's clock with the reader's, as for presence:
//     keep hosts in NTP sync.
//   - A lookup on an NFS client may not yet show an event another host has
//     published. Publishing then fails with "exists", and the writer looks
//     again until it can read that event, so the only cost is a retry.
package task
