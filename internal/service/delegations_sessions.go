package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/internal/workspace/worktree"
	"github.com/collabdev/collab/presence"
)

// DefaultStopGrace is how long a delegated watcher may take to stop
// before it is killed: its own grace for its running CLI, and some.
const DefaultStopGrace = runenv.Grace + 10*time.Second

// MaxStatusJobs bounds the jobs SessionStatus returns.
const MaxStatusJobs = 5

// getuid is the account acting on records; tests that cannot chown make
// it another account's.
var getuid = os.Getuid

// Sessions implements [Delegations].
func (m *Mount) Sessions(ctx context.Context, q SessionsQuery) ([]SessionInfo, error) {
	by, err := sessionsBy(q.By)
	if err != nil {
		return nil, err
	}
	list, err := sessions.List(m.cfg.Root)
	if err != nil {
		return nil, err
	}
	now := m.cfg.Now()
	out := []SessionInfo{}
	for i := range list {
		s := &list[i]
		if s.Status == sessions.Removed && !q.All || by != "" && s.DelegatedBy != by {
			continue
		}
		out = append(out, SessionInfo{Session: s, State: m.agentState(s.Agent, now)})
	}
	return out, nil
}

// sessionsBy is the agent id of a query's By ("" for none).
func sessionsBy(by string) (string, error) {
	if by == "" {
		return "", nil
	}
	id, err := workflow.ParseAddress(by)
	if err != nil {
		return "", errkind.Wrap(errkind.Invalid, err)
	}
	return id, nil
}

// agentState is the agent's presence as who shows it.
func (m *Mount) agentState(agent string, now time.Time) string {
	st, err := presence.Read(m.cfg.Root, agent)
	if err != nil {
		return presence.StateOffline
	}
	return st.Effective(now, 0, m.cfg.Host, proc.PIDAlive)
}

// session is the session ref names: NotFound when there is none, or when
// ref.By did not delegate it.
func (m *Mount) session(ref SessionRef) (*sessions.Session, error) {
	by, err := sessionsBy(ref.By)
	if err != nil {
		return nil, err
	}
	switch {
	case ref.ID == "":
		return nil, errkind.New(errkind.Invalid, "the session id is required")
	case ref.IDOnly:
		if err := sessions.CheckID(ref.ID); err != nil {
			return nil, errkind.New(errkind.Invalid, "%q is not a session id", ref.ID)
		}
	}
	s, err := sessions.Find(m.cfg.Root, ref.ID)
	switch {
	case by != "" && (errors.Is(err, sessions.ErrNotFound) || err == nil && s.DelegatedBy != by):
		return nil, errkind.New(errkind.NotFound, "no session %s delegated by %s", tree.Printable(ref.ID), by)
	case errors.Is(err, sessions.ErrNotFound):
		return nil, errkind.New(errkind.NotFound, "no session %s", tree.Printable(ref.ID))
	}
	return s, err
}

// FindSession implements [Delegations].
func (m *Mount) FindSession(ctx context.Context, ref SessionRef) (*sessions.Session, error) {
	return m.session(ref)
}

// SessionStatus implements [Delegations].
func (m *Mount) SessionStatus(ctx context.Context, ref SessionRef) (*SessionStatus, error) {
	s, err := m.session(ref)
	if err != nil {
		return nil, err
	}
	out := &SessionStatus{Session: s, State: m.agentState(s.Agent, m.cfg.Now()), Jobs: []jobs.Job{}}
	if js, err := jobs.List(m.cfg.Root, s.Agent); err == nil {
		if len(js) > MaxStatusJobs {
			js = js[:MaxStatusJobs] // newest first
		}
		for i := range js {
			js[i].Events = nil
		}
		out.Jobs = js
	}
	if msgs, _, err := channel.Tail(m.cfg.Root, s.Channel, "", 1); err == nil && len(msgs) == 1 {
		out.Last = &msgs[0]
	}
	if s.Status != sessions.Removed {
		if st, err := worktree.Status(ctx, s.Worktree, s.Base); err == nil {
			out.Git = st
		} else {
			out.GitError = err.Error()
		}
	}
	return out, nil
}

// SendToSession implements [Delegations].
func (m *Mount) SendToSession(ctx context.Context, a Actor, req SendToSessionRequest) (*channel.Message, error) {
	if _, err := parseAgent("agent", a.Name); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Text) == "" {
		return nil, errkind.New(errkind.Invalid, "the message is empty")
	}
	s, err := m.session(req.Session)
	if err != nil {
		return nil, err
	}
	res, err := m.Post(ctx, a, PostRequest{Channel: s.Channel, To: s.Agent, Text: req.Text})
	if err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	return &res.Message, nil
}

// actable is the session ref names, refused unless this host and this
// account may act on it: removed, or on another host, is Conflict; a
// record sessions.Check refuses (another account's, or one another
// account could have written) is Forbidden.
func (m *Mount) actable(ref SessionRef) (*sessions.Session, error) {
	s, err := m.session(ref)
	if err != nil {
		return nil, err
	}
	switch {
	case s.Status == sessions.Removed:
		return s, errkind.New(errkind.Conflict, "session %s was removed", s.ID)
	case s.Host != m.cfg.Host:
		return s, errkind.New(errkind.Conflict, "session %s runs on host %s; stop it there", s.ID, s.Host)
	}
	if err := sessions.Check(m.cfg.Root, s, getuid()); err != nil {
		// Another account's record, or one another account could have
		// written: what it names is not this account's to signal.
		return s, errkind.Wrap(errkind.Forbidden, fmt.Errorf("session %s: %w", s.ID, err))
	}
	return s, nil
}

// StopSession implements [Delegations].
func (m *Mount) StopSession(ctx context.Context, req StopSessionRequest) (*sessions.Session, error) {
	s, err := m.actable(req.Session)
	if err != nil {
		return nil, err
	}
	if err := sessions.Stop(m.cfg.Root, s, m.cfg.Host, cmp.Or(req.Grace, DefaultStopGrace)); err != nil {
		return nil, err
	}
	return s, nil
}

// RemoveSession implements [Delegations].
func (m *Mount) RemoveSession(ctx context.Context, req RemoveSessionRequest) (*Removed, error) {
	s, err := m.actable(req.Session)
	if err != nil {
		return nil, err
	}
	if !req.Force {
		// Refuse before stopping anything.
		if st, err := worktree.Status(ctx, s.Worktree, ""); err == nil && len(st.Dirty) > 0 {
			return nil, dirtyRefusal(s, st.Dirty)
		}
	}
	if err := sessions.Stop(m.cfg.Root, s, m.cfg.Host, cmp.Or(req.Grace, DefaultStopGrace)); err != nil {
		return nil, err
	}
	err = worktree.Remove(ctx, s.Repo, s.Worktree, req.Force)
	if de := (*worktree.DirtyError)(nil); errors.As(err, &de) {
		return nil, dirtyRefusal(s, de.Files)
	}
	if err != nil {
		return nil, err
	}
	s.Status = sessions.Removed
	if err := sessions.Update(m.cfg.Root, s); err != nil {
		return nil, err
	}
	out := &Removed{Session: s}
	if err := removeKey(s); err != nil {
		out.KeyError = err.Error()
	}
	return out, nil
}

// dirtyRefusal is rm's refusal of a worktree with uncommitted changes.
func dirtyRefusal(s *sessions.Session, files []string) error {
	return errkind.New(errkind.Conflict, "worktree %s has uncommitted changes (commit them, or force to lose them):\n  %s",
		tree.Printable(s.Worktree), tree.Printable(strings.Join(files, "\n  ")))
}

// removeKey removes the key made for s's agent: the file the record
// names, when it is that agent's key file.
func removeKey(s *sessions.Session) error {
	if s.Key == "" || filepath.Base(s.Key) != s.Agent+".key" {
		return nil
	}
	if err := os.Remove(s.Key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Resume implements [Delegations].
func (m *Mount) Resume(ctx context.Context, req ResumeRequest) (*Resumed, error) {
	list, err := sessions.List(m.cfg.Root)
	if err != nil {
		return nil, err
	}
	out := &Resumed{}
	for i := range list {
		s := &list[i]
		if s.Status != sessions.Running || s.Host != m.cfg.Host || sessions.Alive(s) || len(s.Args) == 0 || s.Args[0] != "watch" {
			continue
		}
		if err := sessions.Check(m.cfg.Root, s, getuid()); errors.Is(err, sessions.ErrForeign) {
			out.Skipped = append(out.Skipped, s)
			continue
		} else if err != nil {
			out.Failed = append(out.Failed, ResumeFailure{s, errkind.Wrap(errkind.Forbidden, err)})
			continue
		}
		if !req.DryRun {
			if _, err := m.startSession(ctx, s, cmp.Or(req.StartTimeout, defaultStartTimeout)); err != nil {
				out.Failed = append(out.Failed, ResumeFailure{s, err})
				continue
			}
		}
		out.Restarted = append(out.Restarted, s)
	}
	return out, nil
}
