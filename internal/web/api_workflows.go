package web

import (
	"context"
	"net/http"
	"slices"

	"github.com/collabdev/collab/internal/service"
)

// Instance is one row of collab ls: a workflow instance's record with
// its status judged, or a delegated session (Name "delegate").
type Instance = service.Instance

// Instances lists what collab ls lists, newest first: the workflow
// instances, their status judged, then the delegated sessions not removed.
// Its cost is one read per record and one presence read per agent.
func (s *Server) Instances(ctx context.Context) ([]Instance, error) {
	all, err := s.svc.Instances(ctx)
	if err != nil {
		return nil, err
	}
	// The workflow instances before the delegations, each newest first.
	slices.SortStableFunc(all, func(a, b Instance) int {
		if da, db := a.Delegation != nil, b.Delegation != nil; da != db {
			if da {
				return 1
			}
			return -1
		}
		return b.Started.Compare(a.Started)
	})
	return all, nil
}

func (s *Server) apiWorkflows(w http.ResponseWriter, r *http.Request) {
	limit, offset, ok := listArgs(w, r)
	if !ok {
		return
	}
	all, err := s.Instances(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"instances": page(all, limit, offset), "total": len(all)})
}

// StopWorkflow asks the running instance id (WORKFLOW@INSTANCE) to stop
// (service.Mount.StopWorkflow), saying who asked. It does not wait for
// the agents to be OFFLINE: GET /api/workflows shows them go. The code
// is the HTTP status of the answer.
func (s *Server) StopWorkflow(ctx context.Context, id, person string) (service.StoppedTarget, int, error) {
	stopped, err := s.svc.StopWorkflow(ctx, service.StopRequest{Target: id, InstanceOnly: true, By: person})
	if err != nil {
		return service.StoppedTarget{}, httpStatus(err), err
	}
	return stopped[0], http.StatusAccepted, nil
}

func (s *Server) apiStopWorkflow(w http.ResponseWriter, r *http.Request) {
	st, code, err := s.StopWorkflow(r.Context(), r.PathValue("id"), personOf(r))
	if err != nil {
		s.refuseCode(w, r, code, err)
		return
	}
	writeJSON(w, code, map[string]any{"instance": Instance{Record: st.Record}, "stop": "asked"})
}
