package web

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/collabdev/collab/internal/agent/runenv"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/presence"
)

// Delegation is one row of collab delegate ls.
type Delegation struct {
	*sessions.Session
	State string `json:"state"` // its agent's presence, as who shows it
}

// Delegations lists the delegated sessions as collab delegate ls does,
// newest first; removed ones only with all.
func (s *Server) Delegations(all bool) ([]Delegation, error) {
	list, err := sessions.List(s.cfg.Root)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b sessions.Session) int { return b.Created.Compare(a.Created) })
	host, _ := os.Hostname()
	now := time.Now()
	out := []Delegation{}
	for i := range list {
		if list[i].Status == sessions.Removed && !all {
			continue
		}
		state := presence.StateOffline
		if st, err := presence.Read(s.cfg.Root, list[i].Agent); err == nil {
			state = st.Effective(now, 0, host, proc.PIDAlive)
		}
		out = append(out, Delegation{&list[i], state})
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

// stopGrace is how long a delegated watcher may take to stop before it is
// killed: collab delegate stop's default.
const stopGrace = runenv.Grace + 10*time.Second

// StopDelegation stops delegated session id as collab delegate stop does,
// with its refusals: a removed session, one on another host, and one whose
// record sessions.Check refuses (another account's, or writable by one).
func (s *Server) StopDelegation(id, person string) (*sessions.Session, int, error) {
	if err := sessions.CheckID(id); err != nil {
		return nil, http.StatusBadRequest, err
	}
	ss, err := sessions.Find(s.cfg.Root, id)
	if errors.Is(err, sessions.ErrNotFound) {
		return nil, http.StatusNotFound, fmt.Errorf("no session %s (see collab delegate ls)", id)
	}
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	host, _ := os.Hostname()
	switch {
	case ss.Status == sessions.Removed:
		return ss, http.StatusConflict, fmt.Errorf("session %s was removed", ss.ID)
	case ss.Host != host:
		return ss, http.StatusConflict, fmt.Errorf("session %s runs on host %s; stop it there", ss.ID, ss.Host)
	}
	if err := sessions.Check(s.cfg.Root, ss, os.Getuid()); err != nil {
		// Another account's record, or one another account could have
		// written: what it names is not this server's to signal.
		return ss, http.StatusForbidden, fmt.Errorf("session %s: %w", ss.ID, err)
	}
	if err := sessions.Stop(s.cfg.Root, ss, host, stopGrace); err != nil {
		return ss, http.StatusInternalServerError, err
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

// refuseCode answers err with code; a 500 is logged (Server.fail).
