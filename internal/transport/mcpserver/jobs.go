package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
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
	addTool(s, "job_list", "List the model runs (jobs) of this agent and of the agents it asked on this channel, newest first, "+
		"with their status (interrupted: the watcher running it is gone).", s.jobList)
	addTool(s, "job_show", "Show one job (by job id, or by the id of the message it answers) with its newest events.", s.jobShow)
	return nil
}

// visibleJobs returns the jobs the agent may see, newest first: on its
// channel, its own and those answering its messages. It lists every
// agent's jobs folder, each bounded by [jobs.Keep] finished and the
// running ones.
func (s *Server) visibleJobs() ([]jobs.Job, error) {
	all, err := jobs.ListAll(s.cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	var out []jobs.Job
	for _, j := range all {
		if j.Channel == s.cfg.Channel && (j.Agent == s.cfg.Agent || j.From == s.cfg.Agent) {
			out = append(out, j)
		}
	}
	return out, nil
}

// judge sets the status of running jobs as they stand.
func (s *Server) judge(js []jobs.Job) {
	now := s.cfg.Now()
	jobs.Judge(js, func(agent string) jobs.Watch {
		w := jobs.Observe(s.cfg.Root, agent, 0)
		w.Now = now
		return w
	})
}

func summary(j jobs.Job) JobSummary {
	return JobSummary{ID: j.ID, Agent: j.Agent, Host: j.Host, Status: j.Status, Message: j.Message, From: j.From,
		CLI: j.CLI, Started: j.Started, Ended: j.Ended, CostUSD: j.CostUSD, Reply: j.Reply,
		Error: modelcli.Clip(j.Error, maxEventText), RerunOf: j.RerunOf}
}

func (s *Server) jobList(ctx context.Context, _ JobListArgs) (JobListResult, error) {
	js, err := s.visibleJobs()
	if err != nil {
		return JobListResult{}, err
	}
	res := JobListResult{Jobs: []JobSummary{}}
	if len(js) > maxJobList {
		res.LeftOff = len(js) - maxJobList
		js = js[:maxJobList]
	}
	s.judge(js)
	for _, j := range js {
		res.Jobs = append(res.Jobs, summary(j))
	}
	return res, nil
}

func (s *Server) jobShow(ctx context.Context, in JobShowArgs) (JobShowResult, error) {
	if in.ID == "" {
		return JobShowResult{}, errors.New("id is required")
	}
	js, err := s.visibleJobs()
	if err != nil {
		return JobShowResult{}, err
	}
	j, err := jobs.Match(js, in.ID)
	if errors.Is(err, fs.ErrNotExist) {
		return JobShowResult{}, fmt.Errorf("no job %s of %s or of an agent it asked on channel %s", in.ID, s.cfg.Agent, s.cfg.Channel)
	}
	if err != nil {
		return JobShowResult{}, err
	}
	one := []jobs.Job{j}
	s.judge(one)
	j = one[0]
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
