package service

import (
	"context"

	"github.com/collabdev/collab/internal/agent/jobs"
)

// Workspace is the operations on an agent's workspace: its inbox, a
// channel's shared documents and task board, the watchers' jobs, the
// keyring, the registry of agents (see the package doc).
//
// Agents are named NAME or NAME@INSTANCE (workflow.ParseAddress); what the
// operations return names them by their id on disk (NAME--INSTANCE), which
// a door shows with workflow.Address.
type Workspace interface {
	Tasks
	Keys
	Agents

	// Inbox returns the unread messages for an agent, oldest first, and
	// acknowledges them unless the request only peeks.
	Inbox(ctx context.Context, req InboxRequest) (InboxResult, error)
	// AckInbox acknowledges an agent's unread messages up to a message id
	// or a time. An id in none of the channels is NotFound.
	AckInbox(ctx context.Context, req AckRequest) (Acked, error)

	// Doc performs one action on a channel's shared documents, as the
	// actor. A version that no longer matches, or a file that create
	// finds, is Conflict; a missing file NotFound; a bad path Invalid.
	Doc(ctx context.Context, a Actor, req DocRequest) (DocResult, error)

	// Jobs returns the jobs a query selects, newest first, each with its
	// status as it stands (interrupted when its watcher is gone).
	Jobs(ctx context.Context, q JobQuery) ([]jobs.Job, error)
	// Job finds one job among those q selects: by its id, or by the id of
	// the message it answers (its newest job). An id that names jobs of
	// two agents is Invalid; none NotFound.
	Job(ctx context.Context, q JobQuery, id string) (jobs.Job, error)
	// MayKill reports (nil) whether the actor may kill job j: the one rule
	// (jobs.MayKill) as the watcher will judge the request.
	MayKill(ctx context.Context, a Actor, req KillRequest, j jobs.Job) error
	// KillJob asks the watcher running a job to stop it, as the actor.
	// A finished job is Conflict (ErrNotRunning), a job the actor may not
	// kill Forbidden, a request while another's is pending Conflict.
	KillJob(ctx context.Context, a Actor, req KillRequest) (Killed, error)
}
