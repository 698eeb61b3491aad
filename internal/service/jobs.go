package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// ErrNotRunning is wrapped (kind Conflict) by KillJob for a job that has
// ended: there is nothing to stop.
var ErrNotRunning = errors.New("not running")

// JobQuery selects jobs.
type JobQuery struct {
	// Agent: only this agent's jobs (NAME or NAME@INSTANCE); "" every
	// agent's.
	Agent string
	// Viewer, when set, keeps only what that agent may see (the MCP
	// tools' agent): on Channel, its own jobs and those answering its
	// messages; anywhere, the jobs of the sessions it delegated.
	Viewer  string
	Channel string
	// Since, when set, keeps only the events at or after it (Job).
	Since time.Time
}

// KillRequest names the job KillJob stops.
type KillRequest struct {
	// Job is a job id, or the id of the message it answers.
	Job string
	// Of: only this agent's jobs (NAME or NAME@INSTANCE).
	Of string
	// Local: the request is made by this process's own account, which
	// may be the tree's admin (the CLI on the mount). A door that acts
	// for someone it authenticated (the page, the bridge) leaves it
	// false: the actor is judged by name, never as the admin.
	Local bool
	// Signed is a request made and signed elsewhere (a remote agent's,
	// through the bridge), which the door has verified as the actor's:
	// written as it is, for exactly the job Of and Job name.
	Signed *jobs.Kill
}

// Killed is what KillJob asked.
type Killed struct {
	Job jobs.Job
	// By is who the kill file names.
	By string
}

// judgeJobs sets the status of running jobs as they stand.
func (m *Mount) judgeJobs(js []jobs.Job) {
	now := m.cfg.Now()
	jobs.Judge(js, func(agent string) jobs.Watch {
		w := jobs.Observe(m.cfg.Root, agent, 0)
		w.Now = now
		return w
	})
}

// Jobs implements Workspace.
func (m *Mount) Jobs(_ context.Context, q JobQuery) ([]jobs.Job, error) {
	js, err := m.listJobs(q)
	if err != nil {
		return nil, err
	}
	m.judgeJobs(js)
	return js, nil
}

// listJobs lists the jobs q selects, newest first, as recorded.
func (m *Mount) listJobs(q JobQuery) ([]jobs.Job, error) {
	var js []jobs.Job
	var err error
	if q.Agent != "" {
		id, perr := parseAgent("agent", q.Agent)
		if perr != nil {
			return nil, perr
		}
		js, err = jobs.List(m.cfg.Root, id)
	} else {
		js, err = jobs.ListAll(m.cfg.Root)
	}
	if err != nil {
		return nil, errkind.Wrap(errkind.Of(err), fmt.Errorf("list jobs: %w", err))
	}
	if q.Viewer == "" {
		if js == nil {
			js = []jobs.Job{}
		}
		return js, nil
	}
	return m.visible(js, q)
}

// visible keeps the jobs of js that q.Viewer may see.
func (m *Mount) visible(js []jobs.Job, q JobQuery) ([]jobs.Job, error) {
	viewer, err := parseAgent("agent", q.Viewer)
	if err != nil {
		return nil, err
	}
	delegated := map[string]bool{}
	all, err := sessions.List(m.cfg.Root)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, errkind.Wrap(errkind.Failed, fmt.Errorf("list sessions: %w", err))
	}
	for _, s := range all {
		if s.DelegatedBy == viewer {
			delegated[s.Agent] = true
		}
	}
	out := []jobs.Job{}
	for _, j := range js {
		mine := j.Channel == q.Channel && (j.Agent == viewer || j.From == viewer)
		if mine || delegated[j.Agent] {
			out = append(out, j)
		}
	}
	return out, nil
}

// Job implements Workspace.
func (m *Mount) Job(_ context.Context, q JobQuery, id string) (jobs.Job, error) {
	j, err := m.lookupJob(q, id)
	if err != nil {
		return jobs.Job{}, err
	}
	one := []jobs.Job{j}
	m.judgeJobs(one)
	if !q.Since.IsZero() {
		one[0].Events = slices.DeleteFunc(one[0].Events, func(e modelcli.Event) bool { return e.Time.Before(q.Since) })
	}
	return one[0], nil
}

func (m *Mount) lookupJob(q JobQuery, id string) (jobs.Job, error) {
	if id == "" {
		return jobs.Job{}, errkind.New(errkind.Invalid, "no job id")
	}
	var j jobs.Job
	var err error
	switch {
	case q.Viewer != "":
		var js []jobs.Job
		if js, err = m.listJobs(q); err != nil {
			return jobs.Job{}, err
		}
		j, err = jobs.Match(js, id)
		if errors.Is(err, fs.ErrNotExist) {
			return jobs.Job{}, errkind.New(errkind.NotFound, "no job %s of %s or of an agent it asked on channel %s, or of a session it delegated",
				tree.Printable(id), q.Viewer, q.Channel)
		}
	default:
		agent := ""
		if q.Agent != "" {
			if agent, err = parseAgent("agent", q.Agent); err != nil {
				return jobs.Job{}, err
			}
		}
		j, err = jobs.Lookup(m.cfg.Root, agent, id)
	}
	switch {
	case err == nil:
		return j, nil
	case errors.Is(err, tree.ErrBadName), errors.Is(err, jobs.ErrAmbiguous):
		return jobs.Job{}, errkind.Wrap(errkind.Invalid, err)
	}
	return jobs.Job{}, errkind.Wrap(errkind.Of(err), err)
}

// MayKill implements Workspace: jobs.MayKill, the one rule, for the
// request req of a as the watcher will judge it under the default trust
// policy (it cannot know a watcher run with another --trust).
func (m *Mount) MayKill(_ context.Context, a Actor, req KillRequest, j jobs.Job) error {
	if err := jobs.MayKill(j, m.requester(a, req, j)); err != nil {
		return errkind.Wrap(errkind.Forbidden, err)
	}
	return nil
}

// requester is who a's request is, as the watcher will judge it.
func (m *Mount) requester(a Actor, req KillRequest, j jobs.Job) jobs.Requester {
	by := killBy(a)
	if req.Signed != nil {
		return jobs.Requester{Name: by, Verdict: signing.Verified, Authentic: true}
	}
	r := jobs.Asking(m.cfg.Verifier, j.Agent, j.ID, by, a.Signer)
	if req.Local {
		r.Admin = jobs.Admin(m.cfg.Root, os.Geteuid(), jobs.Runner(m.cfg.Root, j.Agent, j.ID))
	}
	return r
}

// killBy is the name a kill file gives for a: an agent's id when a names
// an agent (NAME@INSTANCE is NAME--INSTANCE), else the name as given.
func killBy(a Actor) string {
	if id, err := workflow.ParseAddress(a.Name); err == nil {
		return id
	}
	return a.Name
}

// KillJob implements Workspace.
func (m *Mount) KillJob(ctx context.Context, a Actor, req KillRequest) (Killed, error) {
	j, err := m.killTarget(a, req)
	if err != nil {
		return Killed{}, err
	}
	if err := m.MayKill(ctx, a, req, j); err != nil {
		return Killed{}, err
	}
	by := killBy(a)
	// The file is the request; a door may also tell the watcher at once.
	if req.Signed != nil {
		err = jobs.WriteKill(m.cfg.Root, j.Agent, j.ID, *req.Signed)
	} else {
		err = jobs.RequestKill(m.cfg.Root, j.Agent, j.ID, by, a.Signer)
	}
	switch {
	case errors.Is(err, jobs.ErrKillPending):
		return Killed{}, errkind.Wrap(errkind.Conflict, err)
	case err != nil:
		return Killed{}, errkind.Wrap(errkind.Of(err), err)
	}
	return Killed{Job: j, By: by}, nil
}

// killTarget finds the running job req names.
func (m *Mount) killTarget(a Actor, req KillRequest) (jobs.Job, error) {
	if req.Signed == nil {
		j, err := m.Job(context.Background(), JobQuery{Agent: req.Of}, req.Job)
		if err != nil {
			return jobs.Job{}, err
		}
		if j.Done() {
			return jobs.Job{}, errkind.Wrap(errkind.Conflict, fmt.Errorf("%s is %s, %w", j.ID, j.Status, ErrNotRunning))
		}
		return j, nil
	}
	// A signed request names its job exactly.
	of, err := parseAgent("agent", req.Of)
	if err != nil {
		return jobs.Job{}, err
	}
	j, err := jobs.Read(m.cfg.Root, of, req.Job)
	if errors.Is(err, fs.ErrNotExist) && of == killBy(a) {
		return jobs.Job{ID: req.Job, Agent: of}, nil // its own job, recorded on its own host
	}
	if errors.Is(err, tree.ErrBadName) {
		return jobs.Job{}, errkind.Wrap(errkind.Invalid, err)
	}
	return j, errkind.Wrap(errkind.Of(err), err)
}
