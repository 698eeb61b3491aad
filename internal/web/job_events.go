package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/service"
)

// Jobs and their event streams. A job's events live in its record
// (ROOT/state/AGENT/jobs/JOB.json, package jobs), which the watcher running
// it rewrites atomically as events arrive (progress at most every half
// second). A stream of a job's events re-reads that one record when
// inotify sees it replaced on this host, and at the poll interval for
// other hosts' writes, and sends only the events past those already sent
// (an event's id is its index in the record). It ends with an "end" event
// once the record says the job ended (or its watcher is gone: the status
// jobs.Judge gives), after the last events.

// pageEvents bounds the events of one job the agent's page shows (the
// newest); the record keeps them all.
const pageEvents = 100

// JobView is a job as GET /api/agents/AGENT/jobs lists it: the record
// without its events, and how many there are.
type JobView struct {
	jobs.Job
	Events     []modelcli.Event `json:"events,omitempty"` // none in a list
	EventCount int              `json:"event_count"`
}

// agentJobs reads agent's jobs (NAME or NAME@INSTANCE), newest first,
// their status judged (a running record whose watcher is gone is
// interrupted).
func (s *Server) agentJobs(ctx context.Context, agent string) ([]jobs.Job, error) {
	return s.svc.Jobs(ctx, service.JobQuery{Agent: agent})
}

// readJob reads one job, its status judged.
func (s *Server) readJob(ctx context.Context, agent, id string) (jobs.Job, error) {
	return s.svc.Job(ctx, service.JobQuery{Agent: agent}, id)
}

// jobFailed answers an error of the job operations: a bad name or a job
// not there is 404 (what the URL names does not exist).
func (s *Server) jobFailed(w http.ResponseWriter, r *http.Request, err error, msg string) {
	switch errkind.Of(err) {
	case errkind.Invalid, errkind.NotFound:
		if msg == "" {
			msg = err.Error()
		}
		refuse(w, r, http.StatusNotFound, msg)
	default:
		s.fail(w, r, err)
	}
}

// apiJobs lists an agent's jobs (at most pageJobs, newest first) without
// their events.
func (s *Server) apiJobs(w http.ResponseWriter, r *http.Request) {
	js, err := s.agentJobs(r.Context(), r.PathValue("agent"))
	if err != nil {
		s.jobFailed(w, r, err, "")
		return
	}
	out := make([]JobView, 0, min(len(js), pageJobs))
	for _, j := range js[:min(len(js), pageJobs)] {
		v := JobView{Job: j, EventCount: len(j.Events)}
		v.Job.Events = nil
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": out, "more": max(len(js)-pageJobs, 0)})
}

// apiJob answers one job's record with its events.
func (s *Server) apiJob(w http.ResponseWriter, r *http.Request) {
	j, err := s.readJob(r.Context(), r.PathValue("agent"), r.PathValue("job"))
	if err != nil {
		s.jobFailed(w, r, err, "no such job")
		return
	}
	writeJSON(w, http.StatusOK, JobView{Job: j, Events: j.Events, EventCount: len(j.Events)})
}

// apiJobEvents streams a job's events as server-sent events: "event"
// events, each the event's JSON, its id the event's index, then "end"
// with {"status"} once the job has ended. Last-Event-ID (or ?from=N, the
// count the client has) starts it past the events the client has.
func (s *Server) apiJobEvents(w http.ResponseWriter, r *http.Request) {
	s.jobEvents(w, r, func(_ int, e modelcli.Event) []byte {
		data, _ := json.Marshal(e)
		return data
	}, func(j jobs.Job) []byte {
		data, _ := json.Marshal(map[string]string{"status": j.Status})
		return data
	})
}

// pageJobEvents streams a job's events for the agent's page: each a
// rendered list item, then "end" with the job's status.
func (s *Server) pageJobEvents(w http.ResponseWriter, r *http.Request) {
	s.jobEvents(w, r, func(i int, e modelcli.Event) []byte {
		var b bytes.Buffer
		if err := pageTemplates.ExecuteTemplate(&b, "event", eventRow{Index: i, Event: e}); err != nil {
			s.log.Warn("job events: render", "err", err)
			return nil
		}
		return b.Bytes()
	}, func(j jobs.Job) []byte {
		return []byte(j.Status)
	})
}

// jobEvents is the stream of a job's events: the data of event i made by
// event, of the end by end (nil: nothing sent); writeEvent frames them.
func (s *Server) jobEvents(w http.ResponseWriter, r *http.Request, event func(int, modelcli.Event) []byte, end func(jobs.Job) []byte) {
	j, err := s.readJob(r.Context(), r.PathValue("agent"), r.PathValue("job"))
	if err != nil {
		s.jobFailed(w, r, err, "no such job")
		return
	}
	from := resumeJob(r, len(j.Events))
	rc, release, ok := s.openStream(w, r)
	if !ok {
		return
	}
	defer release()
	s.stream(r.Context(), w, rc, &jobFeed{s: s, w: w, agent: j.Agent, id: j.ID, from: from, event: event, end: end}, nil)
}

// resumeJob returns the first event to send of a job whose record holds
// n: the one after Last-Event-ID, else ?from=N (the count the client
// has), else 0. Each is honoured only when it is a position in the
// record (an index below n; a count up to n): one past it would hold the
// stream silent until the job caught up, or for good.
func resumeJob(r *http.Request, n int) int {
	if i, err := strconv.Atoi(r.Header.Get("Last-Event-ID")); err == nil && i >= 0 && i < n {
		return i + 1
	}
	if c, err := strconv.Atoi(r.URL.Query().Get("from")); err == nil && c > 0 && c <= n {
		return c
	}
	return 0
}

// jobFeed is one job's new events.
type jobFeed struct {
	s         *Server
	w         http.ResponseWriter
	agent, id string
	from      int // the events sent (or the client had)
	event     func(int, modelcli.Event) []byte
	end       func(jobs.Job) []byte
}

// watch wakes on the record's replacement in the agent's jobs folder.
func (f *jobFeed) watch(ctx context.Context, wake func(string)) {
	_ = fswake.Watch(ctx, []string{f.s.cfg.Root.Jobs(f.agent)}, func(_, name string) { wake(name) })
}

// next re-reads the record when listing or when a hint names it (or is
// the "look" of a lost event) and sends the events past from.
func (f *jobFeed) next(list bool, hints []string) (int, bool) {
	if !list {
		look := len(hints) == 0
		for _, h := range hints {
			look = look || h == f.id+".json"
		}
		if !look {
			return 0, true
		}
	}
	j, err := f.s.readJob(context.Background(), f.agent, f.id)
	if err != nil {
		if errkind.Is(err, errkind.NotFound) {
			return 0, false // pruned: nothing more will come
		}
		f.s.log.Warn("job events: read", "agent", f.agent, "job", f.id, "err", err)
		return 0, true
	}
	sent := 0
	for ; f.from < len(j.Events); f.from++ {
		if b := f.event(f.from, j.Events[f.from]); b != nil {
			if err := writeEvent(f.w, "event", strconv.Itoa(f.from), b); err != nil {
				return sent, false
			}
			sent++
		}
	}
	if j.Done() {
		if b := f.end(j); b != nil {
			_ = writeEvent(f.w, "end", "", b)
		}
		return sent, false
	}
	return sent, true
}

// eventRow is one event as the agent's page shows it.
type eventRow struct {
	Index int
	modelcli.Event
}

// When is the event's time, to read.
func (e eventRow) When() string { return e.Time.UTC().Format("15:04:05") }

// jobEventsURL is the page's stream of job j's events past the n shown.
func jobEventsURL(j jobs.Job, n int) string {
	return fmt.Sprintf("/agents/%s/jobs/%s/events?from=%d", j.Agent, j.ID, n)
}
