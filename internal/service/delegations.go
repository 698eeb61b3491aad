package service

import (
	"context"
	"encoding/json"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/internal/workspace/worktree"
)

// Delegations is the operations on delegated sessions (see the package
// doc): an agent working in a git worktree of its own, on its own branch
// and channel, its watcher detached on the host that delegated (package
// sessions keeps the records, package worktree the worktrees).
//
// Who may see what: a person (the CLI, the dashboard) sees every session;
// an agent that names itself in [SessionRef.By] or [SessionsQuery.By]
// (the MCP tools) sees only the sessions it delegated, another's being
// NotFound. Who may act: stop, rm and resume act only on a session of
// this host whose record is this account's and writable by no one else
// (sessions.Check); another account's record is Forbidden.
type Delegations interface {
	// Delegate is the whole transaction: the limits (depth, concurrency),
	// the record, the agent's key, the branch and worktree, the detached
	// watcher (Config.Program watch …) until it is AWAKE, and the prompt
	// posted to it as a. On failure everything made is taken back.
	// A limit reached is Conflict; a bad request (repository, base,
	// branch, CLI) Invalid.
	Delegate(ctx context.Context, a Actor, req DelegateRequest) (*Delegated, error)
	// Sessions lists the sessions, oldest first, with their agents'
	// presence.
	Sessions(ctx context.Context, q SessionsQuery) ([]SessionInfo, error)
	// FindSession is the record of the session ref names.
	FindSession(ctx context.Context, ref SessionRef) (*sessions.Session, error)
	// SessionStatus tells where a session stands: its agent's presence,
	// its newest jobs, the last message on its channel, its worktree's
	// commits ahead and uncommitted files.
	SessionStatus(ctx context.Context, ref SessionRef) (*SessionStatus, error)
	// SendToSession posts text to the session's agent on its channel, as a.
	SendToSession(ctx context.Context, a Actor, req SendToSessionRequest) (*channel.Message, error)
	// StopSession ends the session's watcher (its worktree stays).
	StopSession(ctx context.Context, req StopSessionRequest) (*sessions.Session, error)
	// RemoveSession stops the session and removes its worktree and its
	// agent's key, keeping the branch; a worktree with uncommitted changes
	// is Conflict unless req.Force.
	RemoveSession(ctx context.Context, req RemoveSessionRequest) (*Removed, error)
	// Resume restarts, detached, this host's delegated agents recorded
	// running whose watcher is gone.
	Resume(ctx context.Context, req ResumeRequest) (*Resumed, error)
}

// DelegateRequest is what Delegate is asked. Repo and Prompt are
// required; a zero field takes its default.
type DelegateRequest struct {
	// Repo is a folder of the git repository to work on. The worktree is
	// made beside the repository's main working tree, so a delegation
	// from inside a delegated agent's worktree goes beside it.
	Repo   string
	Prompt string
	Base   string // the branch (or commit) to start from; "": Repo's current branch (its commit when detached)
	Branch string // the new branch; "": made from Title or Prompt; never an existing branch
	CLI    string // the agent's CLI adapter: claude (default), codex, gemini or command
	Cmd    string // its command line (required with command)
	Model  string
	Title  string

	// Depth is the delegator's own delegation depth (its
	// $COLLAB_DELEGATION_DEPTH); the layer takes the larger of it and the
	// depth recorded for the session whose agent the delegator is.
	Depth int
	// MaxDepth and MaxConcurrent are the limits: 0 the defaults
	// (sessions.DefaultMaxDepth, DefaultMaxConcurrent), negative none.
	MaxDepth, MaxConcurrent int

	// The delegated watcher's --max-hops, --budget-usd, --budget-tokens
	// (0: none given), --poll and --heartbeat (0: watch's defaults).
	MaxHops      int
	BudgetUSD    float64
	BudgetTokens int64
	Poll         time.Duration
	Heartbeat    time.Duration

	// Worktrees is the folder worktrees go under; "": REPO/../.collab-worktrees.
	Worktrees string
	// KeyDir is the folder the agent's own key is made in (mode 0600);
	// "": this process's collab key folder ($XDG_CONFIG_HOME/collab/keys).
	KeyDir string
	// StartTimeout bounds the wait for the agent to be AWAKE; 0: a minute.
	StartTimeout time.Duration
	// AwaitReply marks the prompt as awaiting a reply (delegate --wait).
	AwaitReply bool
}

// Delegated is a delegation made.
type Delegated struct {
	Session *sessions.Session
	Prompt  *channel.Message // as posted
	// Trust is the command the tree's admin runs so that what the agent
	// signs verifies ("" when it has no key).
	Trust string
}

// DelegatedView is a delegation as the doors print it in JSON (delegate
// --json): the session's record, with seed 001's names for its id, agent
// and worktree, the id of the prompt posted, the trust command and, once
// a door waited for it (delegate --json --wait), the answer.
type DelegatedView struct {
	*sessions.Session
	SessionID    string `json:"sessionId"`
	WorkerID     string `json:"workerId"`
	WorktreePath string `json:"worktreePath"`
	PromptID     string `json:"prompt_id,omitempty"`
	Trust        string `json:"trust,omitempty"` // the admin's command to trust its key
	// Answer is the agent's first answer, as read --json shows a
	// message (with its verdict); absent until a door waits for it.
	Answer json.RawMessage `json:"answer,omitempty"`
}

// View is d as the doors print it, without an answer.
func (d *Delegated) View() DelegatedView {
	s := d.Session
	v := DelegatedView{Session: s, SessionID: s.ID, WorkerID: s.Agent, WorktreePath: s.Worktree, Trust: d.Trust}
	if d.Prompt != nil {
		v.PromptID = d.Prompt.ID
	}
	return v
}

// SessionsQuery selects sessions.
type SessionsQuery struct {
	By  string // if set, only the sessions this agent delegated (NAME or NAME@INSTANCE)
	All bool   // removed ones too
}

// SessionInfo is one session, with its agent's presence.
type SessionInfo struct {
	*sessions.Session
	State string `json:"state"` // as who shows it: AWAKE/IDLE, …, OFFLINE
}

// SessionRef names one session.
type SessionRef struct {
	// ID is the session's id or its agent's id.
	ID string
	// By, if set, is the agent asking: a session it did not delegate is
	// NotFound.
	By string
	// IDOnly refuses (Invalid) an ID without the shape of a session id:
	// for a door that names sessions by id only (the dashboard).
	IDOnly bool
}

// SessionStatus is where a session stands.
type SessionStatus struct {
	*sessions.Session
	State    string           `json:"state"`
	Jobs     []jobs.Job       `json:"jobs"` // the newest first, without their events
	Last     *channel.Message `json:"last_message,omitempty"`
	Git      *worktree.State  `json:"git,omitempty"`       // nil when removed or unreadable
	GitError string           `json:"git_error,omitempty"` // why Git is nil, when not removed
}

// SendToSessionRequest is a follow-up to a session's agent.
type SendToSessionRequest struct {
	Session SessionRef
	Text    string
}

// StopSessionRequest stops a session's watcher.
type StopSessionRequest struct {
	Session SessionRef
	// Grace is how long the watcher may take to stop before it is
	// killed; 0: DefaultStopGrace.
	Grace time.Duration
}

// RemoveSessionRequest stops a session and removes its worktree.
type RemoveSessionRequest struct {
	Session SessionRef
	Grace   time.Duration // as StopSessionRequest's
	Force   bool          // remove the worktree even with uncommitted changes
}

// Removed is a session removed.
type Removed struct {
	Session *sessions.Session
	// KeyError is why the agent's key could not be removed ("" when it was).
	KeyError string
}

// ResumeRequest asks Resume to restart the delegated agents.
type ResumeRequest struct {
	DryRun       bool          // only say what would be restarted
	StartTimeout time.Duration // for each agent to be AWAKE; 0: a minute
}

// Resumed is what Resume did, one entry per session it looked at.
type Resumed struct {
	Restarted []*sessions.Session // with their new pids (with DryRun: those it would restart)
	Skipped   []*sessions.Session // records of another account
	Failed    []ResumeFailure
}

// ResumeFailure is a session Resume could not restart.
type ResumeFailure struct {
	Session *sessions.Session
	Err     error
}
