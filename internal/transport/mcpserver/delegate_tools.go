package mcpserver

import (
	"context"
	"fmt"
	"os"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/worktree"
)

// DelegateArgs are delegate_to_worktree's arguments (seed 001's names).
type DelegateArgs struct {
	Prompt     string `json:"prompt" jsonschema:"the task for the new agent"`
	BaseBranch string `json:"baseBranch,omitempty" jsonschema:"the branch to start from (default: the repository's current branch)"`
	Branch     string `json:"branch,omitempty" jsonschema:"the new branch's name (default: made from the title or prompt; never an existing branch)"`
	AgentID    string `json:"agentId,omitempty" jsonschema:"the new agent's CLI: claude, codex, gemini or command (default claude)"`
	Title      string `json:"title,omitempty" jsonschema:"the session's title"`
}

// DelegateResult is what delegate_to_worktree returns.
type DelegateResult struct {
	SessionID    string `json:"sessionId"`
	WorkerID     string `json:"workerId"` // the new agent's id
	WorktreePath string `json:"worktreePath"`
	Branch       string `json:"branch"`
	BaseBranch   string `json:"baseBranch"`
	Channel      string `json:"channel"` // the session's channel
}

// SessionArgs name one session.
type SessionArgs struct {
	SessionID string `json:"sessionId" jsonschema:"the session's id (as delegate_to_worktree returned it) or its agent's id"`
}

// SessionJob is one job of a session's agent.
type SessionJob struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Message string `json:"message"` // the message it answers
	Reply   string `json:"reply,omitempty"`
	Error   string `json:"error,omitempty"`
}

// SessionStatusResult is what get_session_status returns.
type SessionStatusResult struct {
	SessionID    string       `json:"sessionId"`
	WorkerID     string       `json:"workerId"`
	Status       string       `json:"status"` // the session's: starting, running, stopped, failed, removed
	State        string       `json:"state"`  // its agent's presence: AWAKE/IDLE, AWAKE/WORKING, …, OFFLINE
	Title        string       `json:"title,omitempty"`
	WorktreePath string       `json:"worktreePath"`
	Branch       string       `json:"branch"`
	BaseBranch   string       `json:"baseBranch"`
	Channel      string       `json:"channel"`
	Jobs         []SessionJob `json:"jobs"`
	LastMessage  *Message     `json:"lastMessage,omitempty"`
	CommitsAhead int          `json:"commitsAhead"`
	Dirty        []string     `json:"dirty"` // uncommitted changes, "XY path" as git status --porcelain
	GitError     string       `json:"gitError,omitempty"`
}

// SendToSessionArgs are send_message_to_session's arguments.
type SendToSessionArgs struct {
	SessionID string `json:"sessionId" jsonschema:"the session's id"`
	Message   string `json:"message" jsonschema:"the follow-up for the session's agent"`
}

// SendToSessionResult is what send_message_to_session returns.
type SendToSessionResult struct {
	Success bool   `json:"success"`
	ID      string `json:"id"` // of the message sent
}

// ListSessionsArgs are list_sessions' arguments: none.
type ListSessionsArgs struct{}

// SessionSummary is one session as list_sessions returns it.
type SessionSummary struct {
	SessionID    string `json:"sessionId"`
	WorkerID     string `json:"workerId"`
	Title        string `json:"title,omitempty"`
	Status       string `json:"status"`
	State        string `json:"state"`
	WorktreePath string `json:"worktreePath"`
	Branch       string `json:"branch"`
	Channel      string `json:"channel"`
}

// ListSessionsResult is what list_sessions returns.
type ListSessionsResult struct {
	Sessions []SessionSummary `json:"sessions"`
}

func addDelegateWorktreeTools(s *Server) error {
	addTool(s, "delegate_to_worktree", "Hand a task to a new agent working in a new git worktree of this repository, "+
		"on a new branch, with its own channel: it starts at once with the prompt. "+
		"Follow it with get_session_status and send_message_to_session.", s.delegateToWorktree)
	addTool(s, "get_session_status", "Show where a session you delegated stands: its agent's state, its jobs, "+
		"the last message on its channel, its branch's commits ahead of the base and its uncommitted files.", s.sessionStatus)
	addTool(s, "send_message_to_session", "Send a follow-up message to the agent of a session you delegated.", s.sendToSession)
	addTool(s, "list_sessions", "List the sessions you delegated, oldest first.", s.listSessions)
	return nil
}

// repo is the repository the server's working directory is in.
func (s *Server) repo(ctx context.Context) (string, error) {
	dir := s.cfg.Workdir
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	return worktree.Repo(ctx, dir)
}

// actor is who the delegation tools act as: the server's agent.
func (s *Server) delegator() service.Actor {
	return service.Actor{Name: s.cfg.Agent, Signer: s.cfg.Signer, Hops: s.cfg.Hops, Mode: channel.ModeMCP}
}

func (s *Server) delegateToWorktree(ctx context.Context, in DelegateArgs) (DelegateResult, error) {
	repo, err := s.repo(ctx)
	if err != nil && s.cfg.Remote == nil {
		return DelegateResult{}, fmt.Errorf("the working directory of this server is not in a git repository: %w", err)
	}
	d, err := s.svc.Delegate(ctx, s.delegator(), service.DelegateRequest{
		Repo: repo, Prompt: in.Prompt, Base: in.BaseBranch, Branch: in.Branch, CLI: in.AgentID, Title: in.Title,
	})
	if err != nil {
		return DelegateResult{}, err
	}
	ss := d.Session
	return DelegateResult{SessionID: ss.ID, WorkerID: ss.Agent, WorktreePath: ss.Worktree, Branch: ss.Branch,
		BaseBranch: ss.Base, Channel: ss.Channel}, nil
}

// session names the session id as the server's agent: only its own.
func (s *Server) session(id string) service.SessionRef {
	return service.SessionRef{ID: id, By: s.cfg.Agent}
}

func (s *Server) sessionStatus(ctx context.Context, in SessionArgs) (SessionStatusResult, error) {
	st, err := s.svc.SessionStatus(ctx, s.session(in.SessionID))
	if err != nil {
		return SessionStatusResult{}, err
	}
	ss := st.Session
	res := SessionStatusResult{SessionID: ss.ID, WorkerID: ss.Agent, Status: ss.Status, State: st.State, Title: ss.Title,
		WorktreePath: ss.Worktree, Branch: ss.Branch, BaseBranch: ss.Base, Channel: ss.Channel,
		Jobs: []SessionJob{}, Dirty: []string{}, GitError: st.GitError}
	for _, j := range st.Jobs {
		res.Jobs = append(res.Jobs, SessionJob{ID: j.ID, Status: j.Status, Message: j.Message, Reply: j.Reply, Error: j.Error})
	}
	if m := st.Last; m != nil {
		v := s.view(m)
		v.Verdict = m.Verify(s.cfg.Verifier, ss.Channel).String() // view judges it as of the server's channel
		res.LastMessage = &v
	}
	if st.Git != nil {
		res.CommitsAhead = st.Git.Ahead
		if st.Git.Dirty != nil {
			res.Dirty = st.Git.Dirty
		}
	}
	return res, nil
}

func (s *Server) sendToSession(ctx context.Context, in SendToSessionArgs) (SendToSessionResult, error) {
	m, err := s.svc.SendToSession(ctx, s.delegator(), service.SendToSessionRequest{Session: s.session(in.SessionID), Text: in.Message})
	if err != nil {
		return SendToSessionResult{}, err
	}
	return SendToSessionResult{Success: true, ID: m.ID}, nil
}

func (s *Server) listSessions(ctx context.Context, _ ListSessionsArgs) (ListSessionsResult, error) {
	all, err := s.svc.Sessions(ctx, service.SessionsQuery{By: s.cfg.Agent, All: true})
	if err != nil {
		return ListSessionsResult{}, err
	}
	res := ListSessionsResult{Sessions: []SessionSummary{}}
	for _, ss := range all {
		res.Sessions = append(res.Sessions, SessionSummary{SessionID: ss.ID, WorkerID: ss.Agent, Title: ss.Title,
			Status: ss.Status, State: ss.State, WorktreePath: ss.Worktree, Branch: ss.Branch, Channel: ss.Channel})
	}
	return res, nil
}
