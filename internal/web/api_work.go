package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/documents"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/internal/workspace/task"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// Tasks, documents, workflows and delegations: the same operations as
// collab task list, collab doc, collab ls/stop and collab delegate
// ls/stop, on the packages those commands call.

// Bounds of the work lists: each answer holds at most MaxList entries
// (DefaultList unless ?limit says), paged with ?offset. Reading them costs
// what the CLI's listing costs (one read per task, document entry,
// instance record or session record), never a channel's messages.
const (
	DefaultList = 100
	MaxList     = 500
)

// taskStates are the task board's columns, in order.
var taskStates = []string{task.Pending, task.Claimed, task.Done, task.Failed}

// Column is one state of the task board.
type Column struct {
	State string      `json:"state"`
	Total int         `json:"total"`
	Tasks []task.Task `json:"tasks"` // at most the limit, newest activity first
}

// TaskBoard is a channel's task board by state.
type TaskBoard struct {
	Channel string   `json:"channel"`
	Columns []Column `json:"columns"`
	Skipped []string `json:"skipped,omitempty"` // tasks whose files could not be read
}

// Tasks returns channel ch's board as collab task list reads it (stale
// claims released first), each column at most limit long.
func (s *Server) Tasks(ch string, limit int) (TaskBoard, error) {
	b, err := task.New(s.cfg.Root, ch)
	if err != nil {
		return TaskBoard{}, err
	}
	b.Verifier = s.cfg.Verifier
	tasks, bad, err := b.List()
	if err != nil {
		return TaskBoard{}, err
	}
	tb := TaskBoard{Channel: ch}
	for _, e := range bad {
		tb.Skipped = append(tb.Skipped, e.Error())
	}
	slices.SortStableFunc(tasks, func(a, b task.Task) int { return b.Updated.Compare(a.Updated) })
	for _, st := range taskStates {
		c := Column{State: st, Tasks: []task.Task{}}
		for _, t := range tasks {
			if t.Status != st {
				continue
			}
			c.Total++
			if len(c.Tasks) < limit {
				c.Tasks = append(c.Tasks, t)
			}
		}
		tb.Columns = append(tb.Columns, c)
	}
	return tb, nil
}

func (s *Server) apiTasks(w http.ResponseWriter, r *http.Request) {
	ch, ok := queryChannel(w, r)
	if !ok {
		return
	}
	limit, _, ok := listArgs(w, r)
	if !ok {
		return
	}
	tb, err := s.Tasks(ch, limit)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, tb)
}

// DocList is a page of a channel's documents.
type DocList struct {
	Channel string            `json:"channel"`
	Docs    []documents.Entry `json:"docs"`
	Total   int               `json:"total"`
}

// Docs lists channel ch's documents (collab doc list), the page of limit
// from offset.
func (s *Server) Docs(ch string, limit, offset int) (DocList, error) {
	f, err := documents.New(s.cfg.Root, ch, documents.Options{})
	if err != nil {
		return DocList{}, err
	}
	list, err := f.List()
	if err != nil {
		return DocList{}, err
	}
	return DocList{Channel: ch, Docs: page(list, limit, offset), Total: len(list)}, nil
}

func (s *Server) apiDocs(w http.ResponseWriter, r *http.Request) {
	ch, ok := queryChannel(w, r)
	if !ok {
		return
	}
	limit, offset, ok := listArgs(w, r)
	if !ok {
		return
	}
	l, err := s.Docs(ch, limit, offset)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}

func (s *Server) apiDoc(w http.ResponseWriter, r *http.Request) {
	ch, file, ok := s.docArg(w, r)
	if !ok {
		return
	}
	d, err := s.ReadDoc(ch, file)
	if err != nil {
		s.docFail(w, r, ch, file, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// DocWrite is the body of PUT or POST /api/docs/FILE: the new content
// and the version it was made from ("" to create a new document).
type DocWrite struct {
	Content string `json:"content"`
	Version string `json:"version"`
}

// DocConflict is the answer to a write whose version is no longer the
// document's: its current content and version (Exists false when it was
// deleted, or when a create found it).
type DocConflict struct {
	Error   string `json:"error"`
	File    string `json:"file"`
	Exists  bool   `json:"exists"`
	Version string `json:"version,omitempty"`
	Content string `json:"content"`
}

// DocConflictError is the error of a document write that was refused
// because the document changed since the version the writer read.
type DocConflictError struct {
	Current DocConflict
}

func (e *DocConflictError) Error() string { return e.Current.Error }

// ReadDoc reads a document (collab doc read --json).
func (s *Server) ReadDoc(ch, file string) (documents.Doc, error) {
	f, err := documents.New(s.cfg.Root, ch, documents.Options{})
	if err != nil {
		return documents.Doc{}, err
	}
	return f.Read(file)
}

// WriteDoc writes a document only when it is still at version (collab doc
// write --if-version), or creates it when version is "" (collab doc
// create): it never overwrites another's edit. A refusal is an
// *DocConflictError carrying the document as it now is.
func (s *Server) WriteDoc(r *http.Request, ch, file string, req DocWrite) (string, error) {
	f, err := documents.New(s.cfg.Root, ch, documents.Options{})
	if err != nil {
		return "", err
	}
	var v string
	if req.Version == "" {
		v, err = f.Create(r.Context(), file, req.Content)
	} else {
		v, err = f.Write(r.Context(), file, req.Content, req.Version)
	}
	if errors.Is(err, documents.ErrConflict) || errors.Is(err, fs.ErrExist) {
		c := DocConflict{Error: err.Error(), File: file}
		if errors.Is(err, fs.ErrExist) {
			c.Error = fmt.Sprintf("%s already exists in channel %s", file, ch)
		}
		if d, rerr := f.Read(file); rerr == nil {
			c.Exists, c.Version, c.Content = true, d.Version, d.Content
		}
		return "", &DocConflictError{Current: c}
	}
	if err == nil {
		s.log.Info("document written", "channel", ch, "file", file, "by", personOf(r), "version", v)
	}
	return v, err
}

func (s *Server) apiDocWrite(w http.ResponseWriter, r *http.Request) {
	ch, file, ok := s.docArg(w, r)
	if !ok {
		return
	}
	var req DocWrite
	if !decodeBody(w, r, &req) {
		return
	}
	v, err := s.WriteDoc(r, ch, file, req)
	if err != nil {
		s.docFail(w, r, ch, file, err)
		return
	}
	code := http.StatusOK
	if req.Version == "" {
		code = http.StatusCreated
	}
	writeJSON(w, code, map[string]string{"file": file, "version": v})
}

// docArg returns the request's channel (?channel=) and document path, or
// answers 400.
func (s *Server) docArg(w http.ResponseWriter, r *http.Request) (string, string, bool) {
	ch, ok := queryChannel(w, r)
	if !ok {
		return "", "", false
	}
	file := r.PathValue("file")
	if err := documents.CheckPath(file); err != nil {
		refuse(w, r, http.StatusBadRequest, err.Error())
		return "", "", false
	}
	return ch, file, true
}

// docFail answers a documents error with its status, as collab doc's
// exit codes tell them apart.
func (s *Server) docFail(w http.ResponseWriter, r *http.Request, ch, file string, err error) {
	var ce *DocConflictError
	switch {
	case errors.As(err, &ce):
		writeJSON(w, http.StatusConflict, ce.Current)
	case errors.Is(err, fs.ErrNotExist):
		refuse(w, r, http.StatusNotFound, fmt.Sprintf("%s does not exist in channel %s", file, ch))
	case errors.Is(err, documents.ErrBadPath), errors.Is(err, documents.ErrNotRegular), errors.Is(err, documents.ErrSymlink):
		refuse(w, r, http.StatusBadRequest, err.Error())
	case errors.Is(err, documents.ErrTooLarge):
		refuse(w, r, http.StatusRequestEntityTooLarge, err.Error())
	case errors.Is(err, documents.ErrLockBusy):
		refuse(w, r, http.StatusServiceUnavailable, err.Error())
	default:
		s.fail(w, r, err)
	}
}

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
const stopGrace = watcher.DefaultGrace + 10*time.Second

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
func (s *Server) refuseCode(w http.ResponseWriter, r *http.Request, code int, err error) {
	if code == http.StatusInternalServerError {
		s.fail(w, r, err)
		return
	}
	refuse(w, r, code, err.Error())
}

// queryChannel returns the request's ?channel=, which must be a valid
// channel name, or answers 400.
func queryChannel(w http.ResponseWriter, r *http.Request) (string, bool) {
	ch := r.URL.Query().Get("channel")
	if err := tree.CheckName("channel", ch); err != nil {
		refuse(w, r, http.StatusBadRequest, err.Error())
		return "", false
	}
	return ch, true
}

// listArgs returns ?limit= (1 to MaxList, DefaultList when absent) and
// ?offset= (0 or more), or answers 400.
func listArgs(w http.ResponseWriter, r *http.Request) (limit, offset int, ok bool) {
	q := r.URL.Query()
	limit = DefaultList
	if l := q.Get("limit"); l != "" {
		var err error
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > MaxList {
			refuse(w, r, http.StatusBadRequest, fmt.Sprintf("limit must be 1 to %d", MaxList))
			return 0, 0, false
		}
	}
	if o := q.Get("offset"); o != "" {
		var err error
		if offset, err = strconv.Atoi(o); err != nil || offset < 0 {
			refuse(w, r, http.StatusBadRequest, "offset must be 0 or more")
			return 0, 0, false
		}
	}
	return limit, offset, true
}

// page is the part of list from offset, at most limit long; never nil.
func page[T any](list []T, limit, offset int) []T {
	if offset >= len(list) {
		return []T{}
	}
	return list[offset:min(len(list), offset+limit)]
}

// decodeBody decodes a JSON request body into v, or answers 400 or 413.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			refuse(w, r, http.StatusRequestEntityTooLarge, "request body too large")
			return false
		}
		refuse(w, r, http.StatusBadRequest, "bad JSON body: "+err.Error())
		return false
	}
	return true
}

// routeWorkAPI adds the tasks, documents, workflows and delegations
// endpoints to mux.
func (s *Server) routeWorkAPI(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/tasks", s.apiTasks)
	mux.HandleFunc("GET /api/docs", s.apiDocs)
	mux.HandleFunc("GET /api/docs/{file...}", s.apiDoc)
	mux.HandleFunc("PUT /api/docs/{file...}", s.apiDocWrite)
	mux.HandleFunc("POST /api/docs/{file...}", s.apiDocWrite)
	mux.HandleFunc("GET /api/workflows", s.apiWorkflows)
	mux.HandleFunc("POST /api/workflows/{id}/stop", s.apiStopWorkflow)
	mux.HandleFunc("GET /api/delegations", s.apiDelegations)
	mux.HandleFunc("POST /api/delegations/{id}/stop", s.apiStopDelegation)
}
