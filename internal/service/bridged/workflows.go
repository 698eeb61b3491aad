package bridged

import (
	"context"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
)

// errWorkflows is the answer of every workflow operation: a team's
// watchers run in the process that runs it, on a host with the mount.
func errWorkflows(op string) error {
	return errkind.New(errkind.Unavailable, "%s: workflows need the mounted tree (this host works through a bridge)", op)
}

// RunWorkflow is Unavailable: workflows need the mount.
func (s *Service) RunWorkflow(ctx context.Context, req service.RunRequest) (*service.RunResult, error) {
	return nil, errWorkflows("run")
}

// StartWorkflow is Unavailable: workflows need the mount.
func (s *Service) StartWorkflow(ctx context.Context, req service.StartRequest) (*service.Started, error) {
	return nil, errWorkflows("start")
}

// Instances is Unavailable: workflows need the mount.
func (s *Service) Instances(ctx context.Context) ([]service.Instance, error) {
	return nil, errWorkflows("ls")
}

// StopWorkflow is Unavailable: workflows need the mount.
func (s *Service) StopWorkflow(ctx context.Context, req service.StopRequest) ([]service.StoppedTarget, error) {
	return nil, errWorkflows("stop")
}

// ResumeWorkflows is Unavailable: workflows need the mount.
func (s *Service) ResumeWorkflows(ctx context.Context, req service.WorkflowResumeRequest) []service.WorkflowResumed {
	return []service.WorkflowResumed{{Name: "workflows", Outcome: service.ResumeFailed, Err: errWorkflows("resume")}}
}
