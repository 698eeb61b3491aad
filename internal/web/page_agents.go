package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/service"
)

// The agents pages: the who board, and each agent's jobs with a kill
// button and their events, live for a running job (job_events.go).

// agentsData is what the agents page shows.
type agentsData struct {
	Person   string
	Channels []channelItem
	Channel  string // none: the nav marks no channel
	Agents   []agentRow
	Refresh  int64 // the board reloads this often, in milliseconds
}

// OnAgents tells the nav this is the agents page.
func (agentsData) OnAgents() bool { return true }

// agentRow is one agent on the board.
type agentRow struct {
	AgentView
	Seen, Oldest string // the heartbeat's and the oldest unanswered message's time, to read
	Mark         string // the heartbeat's signature mark, as for messages
	Forged       bool
}

// agentsPage shows the who board, reloaded every poll interval.
func (s *Server) agentsPage(w http.ResponseWriter, r *http.Request) {
	chans, err := s.pageChannels()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.withUnread(chans, personOf(r), "")
	d, err := s.agentsData()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Person, d.Channels = personOf(r), chans
	s.render(w, http.StatusOK, "agents", d)
}

// agentsBoard is the board alone, for its reload (GET /board: an agent
// may be called "board").
func (s *Server) agentsBoard(w http.ResponseWriter, r *http.Request) {
	d, err := s.agentsData()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, http.StatusOK, "board", d)
}

// agentsData reads the who board (Server.Who: one heartbeat file per
// agent).
func (s *Server) agentsData() (agentsData, error) {
	who, err := s.Who(context.Background())
	if err != nil {
		return agentsData{}, err
	}
	d := agentsData{Refresh: max(s.cfg.Poll.Milliseconds(), 100)}
	for _, a := range who {
		row := agentRow{AgentView: a}
		if !a.Time.IsZero() {
			row.Seen = a.Time.UTC().Format("2006-01-02 15:04:05")
		}
		if t, err := time.Parse(time.RFC3339Nano, a.OldestUnanswered); err == nil {
			row.Oldest = t.UTC().Format("2006-01-02 15:04:05")
		} else {
			row.Oldest = a.OldestUnanswered
		}
		row.Mark, row.Forged = mark(s.cfg.Verifier, a.Agent, a.Verdict)
		d.Agents = append(d.Agents, row)
	}
	return d, nil
}

// agentData is what an agent's page shows: its jobs, newest first.
type agentData struct {
	Person   string
	Channels []channelItem
	Channel  string
	Agent    string
	Jobs     []jobRow
	More     int // older records not shown
}

// OnAgents tells the nav this is under the agents page.
func (agentData) OnAgents() bool { return true }

// pageJobs bounds the jobs an agent's page shows.
const pageJobs = 50

// jobRow is one job as the agent's page shows it.
type jobRow struct {
	jobs.Job
	Begun, Finished string
	Events          int
	KillAsked       bool // a kill file exists
	MayKill         bool // running, and the signed-in person may kill it: a kill button
	// Shown are the newest events (at most pageEvents), Earlier the
	// count before them, and Stream, for a running job, the URL of its
	// live events past those.
	Shown   []eventRow
	Earlier int
	Stream  string
}

func (s *Server) jobRow(ctx context.Context, j jobs.Job, person string) jobRow {
	r := jobRow{Job: j, Begun: j.Started.UTC().Format("2006-01-02 15:04:05"), Events: len(j.Events)}
	r.Earlier = max(len(j.Events)-pageEvents, 0)
	for i := r.Earlier; i < len(j.Events); i++ {
		r.Shown = append(r.Shown, eventRow{Index: i, Event: j.Events[i]})
	}
	if !j.Done() {
		r.Stream = jobEventsURL(j, len(j.Events))
	}
	if !j.Ended.IsZero() {
		r.Finished = j.Ended.UTC().Format("2006-01-02 15:04:05")
	}
	r.KillAsked = j.Status == jobs.Running && jobs.KillRequested(s.cfg.Root, j.Agent, j.ID)
	if j.Status == jobs.Running {
		signer, err := s.killSigner(person)
		r.MayKill = err == nil && s.svc.MayKill(ctx, service.Actor{Name: person, Signer: signer}, service.KillRequest{}, j) == nil
	}
	return r
}

// killSigner returns the signer of person's kill requests: the server's
// key for its person, SignerFor's for another; nil signs nothing.
func (s *Server) killSigner(person string) (*signing.Signer, error) {
	if person == s.cfg.Person {
		return s.cfg.Signer, nil
	}
	if s.cfg.SignerFor == nil {
		return nil, nil
	}
	signer, err := s.cfg.SignerFor(person)
	if err != nil {
		return nil, fmt.Errorf("the key of %s: %w", person, err)
	}
	return signer, nil
}

// agentPage shows an agent's jobs (its job records, which the watcher
// prunes to a bounded number), each running one with a kill button.
func (s *Server) agentPage(w http.ResponseWriter, r *http.Request) {
	agent := r.PathValue("agent")
	js, err := s.agentJobs(r.Context(), agent)
	if errkind.Is(err, errkind.Invalid) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	chans, err := s.pageChannels()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.withUnread(chans, personOf(r), "")
	d := agentData{Person: personOf(r), Channels: chans, Agent: agent, More: max(len(js)-pageJobs, 0)}
	for _, j := range js[:min(len(js), pageJobs)] {
		d.Jobs = append(d.Jobs, s.jobRow(r.Context(), j, d.Person))
	}
	s.render(w, http.StatusOK, "agent", d)
}

// pageKill asks the watcher running a job to stop it, as the signed-in
// person (signed with the server's key when it is its person's, or the
// key SignerFor gives), and answers the job's row. The person is judged
// by the name they signed in as, never as the tree's admin (the server's
// account may be the admin's): refused, 403.
func (s *Server) pageKill(w http.ResponseWriter, r *http.Request) {
	ctx, person := r.Context(), personOf(r)
	signer, err := s.killSigner(person)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	k, err := s.svc.KillJob(ctx, service.Actor{Name: person, Signer: signer},
		service.KillRequest{Job: r.PathValue("job"), Of: r.PathValue("agent")})
	switch {
	case errors.Is(err, service.ErrNotRunning):
		j, rerr := s.readJob(ctx, r.PathValue("agent"), r.PathValue("job"))
		if rerr != nil {
			s.jobFailed(w, r, rerr, "no such job")
			return
		}
		s.render(w, http.StatusConflict, "job", s.jobRow(ctx, j, person))
	case errkind.Is(err, errkind.Forbidden):
		refuse(w, r, http.StatusForbidden, err.Error())
	case errkind.Is(err, errkind.Conflict):
		refuse(w, r, http.StatusConflict, err.Error())
	case err != nil:
		s.jobFailed(w, r, err, "no such job")
	default:
		s.render(w, http.StatusOK, "job", s.jobRow(ctx, k.Job, person))
	}
}
