package bridged

import (
	"context"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/registry"
)

// errRegistry answers the registry's operations: entries are written on
// the mount.
var errRegistry = errkind.New(errkind.Unavailable, "the registry of agents is written on the mount")

// RegisterAgent implements service.Workspace: Unavailable.
func (s *Service) RegisterAgent(context.Context, service.Actor, service.AgentRegistration) (registry.Agent, error) {
	return registry.Agent{}, errRegistry
}

// UnregisterAgent implements service.Workspace: Unavailable.
func (s *Service) UnregisterAgent(context.Context, service.Actor) (registry.Agent, error) {
	return registry.Agent{}, errRegistry
}
