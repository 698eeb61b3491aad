package web

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/documents"
	"github.com/collabdev/collab/internal/workspace/task"
)

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

// Tasks returns channel ch's board (stale claims released first), each
// column at most limit long.
func (s *Server) Tasks(ch string, limit int) (TaskBoard, error) {
	l, err := s.svc.Tasks(context.Background(), service.TaskQuery{Channel: ch})
	if err != nil {
		return TaskBoard{}, err
	}
	tb := TaskBoard{Channel: ch, Skipped: l.Skipped}
	tasks := l.Tasks
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
	if errkind.Is(err, errkind.Invalid) {
		refuse(w, r, http.StatusBadRequest, err.Error())
		return
	}
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

// Docs lists channel ch's documents, the page of limit from offset.
func (s *Server) Docs(ch string, limit, offset int) (DocList, error) {
	r, err := s.svc.Doc(context.Background(), service.Actor{}, service.DocRequest{Action: "list", Channel: ch})
	if err != nil {
		return DocList{}, err
	}
	return DocList{Channel: ch, Docs: page(r.Entries, limit, offset), Total: len(r.Entries)}, nil
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

// ReadDoc reads a document.
func (s *Server) ReadDoc(ch, file string) (documents.Doc, error) {
	r, err := s.svc.Doc(context.Background(), service.Actor{}, service.DocRequest{Action: "read", Channel: ch, File: file})
	if err != nil {
		return documents.Doc{}, err
	}
	return *r.Doc, nil
}

// WriteDoc writes a document only when it is still at version, or
// creates it when version is "": it never overwrites another's edit. A
// refusal is an *DocConflictError carrying the document as it now is.
func (s *Server) WriteDoc(r *http.Request, ch, file string, req DocWrite) (string, error) {
	dr := service.DocRequest{Action: "write", Channel: ch, File: file, Content: req.Content, IfVersion: req.Version}
	if req.Version == "" {
		dr.Action = "create"
	}
	res, err := s.svc.Doc(r.Context(), service.Actor{Name: personOf(r)}, dr)
	if errkind.Is(err, errkind.Conflict) {
		c := DocConflict{Error: err.Error(), File: file}
		if d, rerr := s.ReadDoc(ch, file); rerr == nil {
			c.Exists, c.Version, c.Content = true, d.Version, d.Content
		}
		return "", &DocConflictError{Current: c}
	}
	return res.Version, err
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

// docFail answers a documents error with the status of its kind.
func (s *Server) docFail(w http.ResponseWriter, r *http.Request, ch, file string, err error) {
	var ce *DocConflictError
	switch {
	case errors.As(err, &ce):
		writeJSON(w, http.StatusConflict, ce.Current)
	case errors.Is(err, documents.ErrTooLarge):
		refuse(w, r, http.StatusRequestEntityTooLarge, err.Error())
	case errors.Is(err, documents.ErrNotRegular), errors.Is(err, documents.ErrSymlink):
		refuse(w, r, http.StatusBadRequest, err.Error())
	case errkind.Is(err, errkind.NotFound):
		refuse(w, r, http.StatusNotFound, err.Error())
	case errkind.Is(err, errkind.Invalid):
		refuse(w, r, http.StatusBadRequest, err.Error())
	case errkind.Is(err, errkind.Unavailable):
		refuse(w, r, http.StatusServiceUnavailable, err.Error())
	default:
		s.fail(w, r, err)
	}
}
