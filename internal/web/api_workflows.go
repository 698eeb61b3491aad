package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// Instance is one row of collab ls: a workflow instance's record with
// its status judged, or a delegated session (Name "delegate").
type Instance struct {
	workflow.Record
	Delegation *sessions.Session `json:"delegation,omitempty"`
}

// ID is the instance's name in /api/workflows/ID/stop: WORKFLOW@INSTANCE.
func (i Instance) ID() string { return i.Name + "@" + i.Instance }

// Stoppable reports whether a stop has something to stop.
func (i Instance) Stoppable() bool {
	return i.Status == workflow.Running || i.Status == workflow.Starting
}

// Instances lists what collab ls lists, newest first: the workflow
// instances, their status judged, then the delegated sessions not removed.
// Its cost is one read per record and one presence read per agent.
func (s *Server) Instances() ([]Instance, error) {
	recs, err := workflow.Records(s.cfg.Root)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	now := time.Now()
	slices.SortFunc(recs, func(a, b workflow.Record) int { return b.Started.Compare(a.Started) })
	out := make([]Instance, 0, len(recs))
	for _, r := range recs {
		r.Status = workflow.Judge(s.cfg.Root, r, now, host)
		out = append(out, Instance{Record: r})
	}
	list, err := sessions.List(s.cfg.Root)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b sessions.Session) int { return b.Created.Compare(a.Created) })
	for i := range list {
		ss := &list[i]
		if ss.Status == sessions.Removed {
			continue
		}
		status := ss.Status
		if ss.Active() && ss.Host == host && !sessions.Alive(ss) {
			status = workflow.Dead
		}
		out = append(out, Instance{Record: workflow.Record{Name: "delegate", Instance: ss.ID, File: ss.Branch, Host: ss.Host,
			PID: ss.PID, Started: ss.Created, Status: status, Agents: []string{ss.Agent}, Channel: ss.Channel}, Delegation: ss})
	}
	return out, nil
}

func (s *Server) apiWorkflows(w http.ResponseWriter, r *http.Request) {
	limit, offset, ok := listArgs(w, r)
	if !ok {
		return
	}
	all, err := s.Instances()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"instances": page(all, limit, offset), "total": len(all)})
}

// StopWorkflow asks the running instance id (WORKFLOW@INSTANCE) to stop,
// as collab stop does: it writes the instance's stop file, saying who
// asked, which the process running it polls on any host. It does not
// wait for the agents to be OFFLINE: GET /api/workflows shows them go.
func (s *Server) StopWorkflow(id, person string) (workflow.Record, int, error) {
	name, instance, ok := strings.Cut(id, "@")
	if !ok {
		return workflow.Record{}, http.StatusBadRequest, fmt.Errorf("%q: want WORKFLOW@INSTANCE", id)
	}
	if err := workflow.CheckName("workflow", name); err != nil {
		return workflow.Record{}, http.StatusBadRequest, err
	}
	if err := workflow.CheckInstance(instance); err != nil {
		return workflow.Record{}, http.StatusBadRequest, err
	}
	r, err := workflow.ReadRecord(s.cfg.Root, name, instance)
	if errors.Is(err, fs.ErrNotExist) {
		return workflow.Record{}, http.StatusNotFound, fmt.Errorf("no workflow instance %s (see collab ls)", id)
	}
	if err != nil {
		return workflow.Record{}, http.StatusInternalServerError, err
	}
	host, _ := os.Hostname()
	now := time.Now()
	r.Status = workflow.Judge(s.cfg.Root, r, now, host)
	if r.Status != workflow.Running && r.Status != workflow.Starting {
		return r, http.StatusConflict, fmt.Errorf("%s is not running (%s)", id, r.Status)
	}
	// The stop file is this server's account's: the instance honours it
	// only when that account may stop it (workflow.MayStop).
	if err := workflow.MayStop(s.cfg.Root, workflow.RunnerOf(r), os.Geteuid()); err != nil {
		return r, http.StatusForbidden, err
	}
	data, _ := json.Marshal(map[string]any{"by": person, "host": host, "time": now.UTC()})
	if err := workflow.RequestStop(s.cfg.Root, r.Name, r.Instance, data); err != nil {
		return r, http.StatusInternalServerError, err
	}
	s.log.Info("workflow stop asked", "instance", id, "by", person)
	return r, http.StatusAccepted, nil
}

func (s *Server) apiStopWorkflow(w http.ResponseWriter, r *http.Request) {
	rec, code, err := s.StopWorkflow(r.PathValue("id"), personOf(r))
	if err != nil {
		s.refuseCode(w, r, code, err)
		return
	}
	writeJSON(w, code, map[string]any{"instance": Instance{Record: rec}, "stop": "asked"})
}
