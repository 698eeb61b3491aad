package bridged

import (
	"context"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// errNoDelegation is every delegation operation's answer through a bridge.
func errNoDelegation() error {
	return errkind.New(errkind.Unavailable, "delegation is not available in this server: it makes worktrees and starts watchers on a host with the shared tree, and this one goes through a bridge")
}

// Delegate implements service.Delegations: Unavailable.
func (s *Service) Delegate(context.Context, service.Actor, service.DelegateRequest) (*service.Delegated, error) {
	return nil, errNoDelegation()
}

// Sessions implements service.Delegations: Unavailable.
func (s *Service) Sessions(context.Context, service.SessionsQuery) ([]service.SessionInfo, error) {
	return nil, errNoDelegation()
}

// FindSession implements service.Delegations: Unavailable.
func (s *Service) FindSession(context.Context, service.SessionRef) (*sessions.Session, error) {
	return nil, errNoDelegation()
}

// SessionStatus implements service.Delegations: Unavailable.
func (s *Service) SessionStatus(context.Context, service.SessionRef) (*service.SessionStatus, error) {
	return nil, errNoDelegation()
}

// SendToSession implements service.Delegations: Unavailable.
func (s *Service) SendToSession(context.Context, service.Actor, service.SendToSessionRequest) (*channel.Message, error) {
	return nil, errNoDelegation()
}

// StopSession implements service.Delegations: Unavailable.
func (s *Service) StopSession(context.Context, service.StopSessionRequest) (*sessions.Session, error) {
	return nil, errNoDelegation()
}

// RemoveSession implements service.Delegations: Unavailable.
func (s *Service) RemoveSession(context.Context, service.RemoveSessionRequest) (*service.Removed, error) {
	return nil, errNoDelegation()
}

// Resume implements service.Delegations: Unavailable.
func (s *Service) Resume(context.Context, service.ResumeRequest) (*service.Resumed, error) {
	return nil, errNoDelegation()
}
