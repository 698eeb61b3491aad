package web

import (
	"context"
	"net/http"
	"slices"
	"strconv"

	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// Delegation is one delegated session, with its agent's presence.
type Delegation struct {
	service.SessionInfo
}

// Delegations lists the delegated sessions (service.Delegations),
// newest first; removed ones only with all.
func (s *Server) Delegations(all bool) ([]Delegation, error) {
	list, err := s.svc.Sessions(context.Background(), service.SessionsQuery{All: all})
	if err != nil {
		return nil, err
	}
	out := make([]Delegation, 0, len(list))
	for _, d := range slices.Backward(list) { // the service's are oldest first
		out = append(out, Delegation{d})
	}
	return out, nil
}

func (s *Server) apiDelegations(w http.ResponseWriter, r *http.Request) {
	limit, offset, ok := listArgs(w, r)
	if !ok {
		return
	}
	all := false
	if a := r.URL.Query().Get("all"); a != "" {
		var err error
		if all, err = strconv.ParseBool(a); err != nil {
			refuse(w, r, http.StatusBadRequest, "all must be true or false")
			return
		}
	}
	list, err := s.Delegations(all)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"delegations": page(list, limit, offset), "total": len(list)})
}

// StopDelegation stops delegated session id (service.Delegations'
// StopSession, with its refusals), for person; the code is the HTTP
// status of the answer.
func (s *Server) StopDelegation(id, person string) (*sessions.Session, int, error) {
	ss, err := s.svc.StopSession(context.Background(), service.StopSessionRequest{Session: service.SessionRef{ID: id, IDOnly: true}})
	if err != nil {
		return nil, httpStatus(err), err
	}
	s.log.Info("delegation stopped", "session", ss.ID, "agent", ss.Agent, "by", person)
	return ss, http.StatusOK, nil
}

func (s *Server) apiStopDelegation(w http.ResponseWriter, r *http.Request) {
	ss, code, err := s.StopDelegation(r.PathValue("id"), personOf(r))
	if err != nil {
		s.refuseCode(w, r, code, err)
		return
	}
	writeJSON(w, code, ss)
}
