package mcpserver

import (
	"context"
	"errors"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
)

// Bounds of job_list and job_show.
const (
	maxJobList   = 50   // jobs job_list returns, newest first
	maxJobEvents = 100  // events job_show returns, the newest
	maxEventText = 1000 // bytes of an event's text
)

// JobListArgs are job_list's arguments: none.
type JobListArgs struct{}

// JobShowArgs are job_show's arguments.
type JobShowArgs struct {
	ID string `json:"id" jsonschema:"a job id, or the id of the message the job answers"`
}

// JobSummary is one job as job_list returns it.
type JobSummary struct {
	ID      string    `json:"id"`
	Agent   string    `json:"agent"`
	Host    string    `json:"host,omitempty"`
	Status  string    `json:"status"` // running, interrupted (its watcher is gone), completed, failed, killed, awaiting_input
	Message string    `json:"message"`
	From    string    `json:"from"`
	CLI     string    `json:"cli,omitempty"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	CostUSD float64   `json:"cost_usd,omitempty"`
	Reply   string    `json:"reply,omitempty"`
	Error   string    `json:"error,omitempty"`
	RerunOf string    `json:"rerun_of,omitempty"`
}

// JobListResult is what job_list returns.
type JobListResult struct {
	Jobs    []JobSummary `json:"jobs"`
	LeftOff int          `json:"left_off,omitempty"` // older jobs not listed
}

// JobShowResult is what job_show returns: the job and its newest events.
type JobShowResult struct {
	JobSummary
	Session       string           `json:"session,omitempty"`
	Events        []modelcli.Event `json:"events"`
	EventsLeftOff int              `json:"events_left_off,omitempty"` // older events not returned
}

func addJobTools(s *Server) error {
	addTool(s, "job_list", "List the model runs (jobs) of this agent and of the agents it asked on this channel, and of the sessions it delegated, newest first, "+
		"with their status (interrupted: the watcher running it is gone).", s.jobList)
	addTool(s, "job_show", "Show one job (by job id, or by the id of the message it answers) with its newest events.", s.jobShow)
	return nil
}

// jobService is where the job tools read: the tree's service, or on a
// host without the mount its local tree, where `collab watch --remote`
// keeps the agent's own jobs (other agents' jobs are on the mount).
func (s *Server) jobService() service.Workspace {
	if s.cfg.Remote != nil {
		return service.NewMount(service.Config{Root: s.cfg.Root, Now: s.cfg.Now, Host: s.cfg.Host})
	}
	return s.svc
}

// jobQuery is what the agent may see: on its channel, its own jobs and
// those answering its messages, and the jobs of the sessions it delegated.
func (s *Server) jobQuery() service.JobQuery {
	return service.JobQuery{Viewer: s.cfg.Agent, Channel: s.cfg.Channel}
}

func summary(j jobs.Job) JobSummary {
	return JobSummary{ID: j.ID, Agent: workflow.Address(j.Agent), Host: j.Host, Status: j.Status, Message: j.Message, From: workflow.Address(j.From),
		CLI: j.CLI, Started: j.Started, Ended: j.Ended, CostUSD: j.CostUSD, Reply: j.Reply,
		Error: modelcli.Clip(j.Error, maxEventText), RerunOf: j.RerunOf}
}

func (s *Server) jobList(ctx context.Context, _ JobListArgs) (JobListResult, error) {
	js, err := s.jobService().Jobs(ctx, s.jobQuery())
	if err != nil {
		return JobListResult{}, err
	}
	res := JobListResult{Jobs: []JobSummary{}}
	if len(js) > maxJobList {
		res.LeftOff = len(js) - maxJobList
		js = js[:maxJobList]
	}
	for _, j := range js {
		res.Jobs = append(res.Jobs, summary(j))
	}
	return res, nil
}

func (s *Server) jobShow(ctx context.Context, in JobShowArgs) (JobShowResult, error) {
	if in.ID == "" {
		return JobShowResult{}, errors.New("id is required")
	}
	j, err := s.jobService().Job(ctx, s.jobQuery(), in.ID)
	if err != nil {
		return JobShowResult{}, err
	}
	res := JobShowResult{JobSummary: summary(j), Session: j.Session, Events: []modelcli.Event{}}
	evs := j.Events
	if len(evs) > maxJobEvents {
		res.EventsLeftOff = len(evs) - maxJobEvents
		evs = evs[len(evs)-maxJobEvents:]
	}
	for _, e := range evs {
		e.Text = modelcli.Clip(e.Text, maxEventText)
		e.Data = nil // the CLI's own record: not for the model
		res.Events = append(res.Events, e)
	}
	return res, nil
}
