package web

import (
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/documents"
)

// The work pages: the task board, the documents (read, and edited with
// the version check: a conflict is shown, never overwritten), and the
// workflow instances and delegated worktrees with stop buttons. Their
// forms are plain HTML forms (no script needed); what they do is the JSON
// API's (api_work.go).

// routeWorkPages adds the work pages' routes to mux.
func (s *Server) routeWorkPages(mux *http.ServeMux) {
	mux.HandleFunc("GET /tasks", s.tasksPage)
	mux.HandleFunc("GET /docs", s.docsPage)
	mux.HandleFunc("GET /docs/{file...}", s.docPage)
	mux.HandleFunc("POST /docs/{file...}", s.docSave)
	mux.HandleFunc("GET /workflows", s.workflowsPage)
	mux.HandleFunc("POST /workflows/{id}/stop", s.pageStopWorkflow)
	mux.HandleFunc("POST /delegations/{id}/stop", s.pageStopDelegation)
}

// pageList bounds what one work page lists.
const pageList = DefaultList

// workData is what the work pages show.
type workData struct {
	Person   string
	Channels []channelItem
	Channel  string // none: the nav marks no channel
	In       string // the channel of the tasks or documents shown
	With     []string
	Board    TaskBoard
	Docs     DocList
	Doc      *docEdit
	Inst     []Instance
	Dels     []Delegation
	Notice   string
	Bad      bool // Notice is a refusal
}

// OnAgents tells the nav this is not the agents page.
func (workData) OnAgents() bool { return false }

// docEdit is a document as its page shows it: the text in the editor, the
// version it was made from, and a conflict when a save was refused.
type docEdit struct {
	File    string
	Exists  bool
	Version string
	Text    string // the editor's text: the document, or the person's edit
	// Conflict is the other edit's document when a save was refused.
	Conflict *DocConflict
}

// DocURL is the address of document file's page in the channel shown.
func (d workData) DocURL(file string) string {
	return "/docs/" + pathEscape(file) + "?channel=" + url.QueryEscape(d.In)
}

// pathEscape escapes each element of a document path.
func pathEscape(file string) string {
	parts := strings.Split(file, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// workPage starts a work page's data: the nav and the channel asked
// (?channel=), else the first of with; ok false when it answered an error.
func (s *Server) workPage(w http.ResponseWriter, r *http.Request, dir func(string) string) (workData, bool) {
	chans, err := s.pageChannels()
	if err != nil {
		s.fail(w, r, err)
		return workData{}, false
	}
	d := workData{Person: personOf(r), Channels: chans}
	if dir == nil {
		return d, true
	}
	d.With = s.channelsWith(dir)
	d.In = r.URL.Query().Get("channel")
	if d.In == "" && len(d.With) > 0 {
		d.In = d.With[0]
	}
	if d.In != "" {
		if err := tree.CheckName("channel", d.In); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return workData{}, false
		}
	}
	return d, true
}

// channelsWith lists the channels that have a folder where dir puts a
// channel's (Root.Tasks or Root.Docs), at most pageChannels of them.
func (s *Server) channelsWith(dir func(string) string) []string {
	entries, err := os.ReadDir(filepath.Dir(dir("x")))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && tree.ValidName(e.Name()) {
			out = append(out, e.Name())
			if len(out) == pageChannels {
				break
			}
		}
	}
	return out
}

// tasksPage shows a channel's task board by state.
func (s *Server) tasksPage(w http.ResponseWriter, r *http.Request) {
	d, ok := s.workPage(w, r, s.cfg.Root.Tasks)
	if !ok {
		return
	}
	if d.In != "" {
		var err error
		if d.Board, err = s.Tasks(d.In, pageList); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	s.render(w, http.StatusOK, "tasks", d)
}

// docsPage lists a channel's documents.
func (s *Server) docsPage(w http.ResponseWriter, r *http.Request) {
	d, ok := s.workPage(w, r, s.cfg.Root.Docs)
	if !ok {
		return
	}
	if open := strings.TrimSpace(r.URL.Query().Get("open")); open != "" && d.In != "" {
		if err := documents.CheckPath(open); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, d.DocURL(open), http.StatusSeeOther)
		return
	}
	if d.In != "" {
		var err error
		if d.Docs, err = s.Docs(d.In, pageList, 0); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	s.render(w, http.StatusOK, "docs", d)
}

// docPageData is the document page's data, or an error answered.
func (s *Server) docPageData(w http.ResponseWriter, r *http.Request) (workData, bool) {
	d, ok := s.workPage(w, r, nil)
	if !ok {
		return d, false
	}
	d.In = r.URL.Query().Get("channel")
	file := r.PathValue("file")
	if err := tree.CheckName("channel", d.In); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return d, false
	}
	if err := documents.CheckPath(file); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return d, false
	}
	d.Doc = &docEdit{File: file}
	return d, true
}

// docPage shows a document and its editor (empty for a new one).
func (s *Server) docPage(w http.ResponseWriter, r *http.Request) {
	d, ok := s.docPageData(w, r)
	if !ok {
		return
	}
	doc, err := s.ReadDoc(d.In, d.Doc.File)
	switch {
	case err == nil:
		d.Doc.Exists, d.Doc.Version, d.Doc.Text = true, doc.Version, doc.Content
	case errors.Is(err, fs.ErrNotExist):
	default:
		s.docPageFail(w, r, d, err)
		return
	}
	s.render(w, http.StatusOK, "doc", d)
}

// docSave saves the editor's text if the document is still at the
// version it was read at; else it shows the conflict: the other edit's
// text and version, with the person's text kept in the editor.
func (s *Server) docSave(w http.ResponseWriter, r *http.Request) {
	d, ok := s.docPageData(w, r)
	if !ok {
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	// A browser sends a textarea's lines ended with CRLF.
	text := strings.ReplaceAll(r.PostFormValue("content"), "\r\n", "\n")
	req := DocWrite{Content: text, Version: r.PostFormValue("version")}
	_, err := s.WriteDoc(r, d.In, d.Doc.File, req)
	var ce *DocConflictError
	if errors.As(err, &ce) {
		c := ce.Current
		d.Doc.Exists, d.Doc.Version, d.Doc.Text, d.Doc.Conflict = c.Exists, c.Version, text, &c
		s.render(w, http.StatusConflict, "doc", d)
		return
	}
	if err != nil {
		d.Doc.Text, d.Doc.Version, d.Doc.Exists = text, req.Version, req.Version != ""
		s.docPageFail(w, r, d, err)
		return
	}
	http.Redirect(w, r, d.DocURL(d.Doc.File), http.StatusSeeOther)
}

// docPageFail shows the document page with the refusal, keeping the text.
func (s *Server) docPageFail(w http.ResponseWriter, r *http.Request, d workData, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, documents.ErrBadPath), errors.Is(err, documents.ErrNotRegular), errors.Is(err, documents.ErrSymlink):
		code = http.StatusBadRequest
	case errors.Is(err, documents.ErrTooLarge):
		code = http.StatusRequestEntityTooLarge
	case errors.Is(err, documents.ErrLockBusy):
		code = http.StatusServiceUnavailable
	default:
		s.log.Error("document page", "channel", d.In, "file", d.Doc.File, "err", err)
	}
	d.Notice, d.Bad = shown(code, err), true
	s.render(w, code, "doc", d)
}

// workflowsData reads the instances and delegations the workflows page
// shows, at most pageList of each.
func (s *Server) workflowsData(w http.ResponseWriter, r *http.Request) (workData, bool) {
	d, ok := s.workPage(w, r, nil)
	if !ok {
		return d, false
	}
	inst, err := s.Instances(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return d, false
	}
	d.Inst = slices.DeleteFunc(inst, func(i Instance) bool { return i.Delegation != nil })
	d.Inst = d.Inst[:min(len(d.Inst), pageList)]
	dels, err := s.Delegations(false)
	if err != nil {
		s.fail(w, r, err)
		return d, false
	}
	d.Dels = dels[:min(len(dels), pageList)]
	return d, true
}

// workflowsPage shows the workflow instances and the delegated worktrees,
// each running one with a stop button.
func (s *Server) workflowsPage(w http.ResponseWriter, r *http.Request) {
	d, ok := s.workflowsData(w, r)
	if ok {
		s.render(w, http.StatusOK, "workflows", d)
	}
}

// pageStopWorkflow asks an instance to stop and shows the page again.
func (s *Server) pageStopWorkflow(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	_, code, err := s.StopWorkflow(r.Context(), id, personOf(r))
	s.afterStop(w, r, code, err, id+": stop asked; its agents go OFFLINE shortly")
}

// pageStopDelegation stops a delegated session and shows the page again.
func (s *Server) pageStopDelegation(w http.ResponseWriter, r *http.Request) {
	ss, code, err := s.StopDelegation(r.PathValue("id"), personOf(r))
	msg := ""
	if err == nil {
		msg = "session " + ss.ID + ": " + ss.Agent + " stopped; its worktree " + ss.Worktree + " stays"
	}
	s.afterStop(w, r, code, err, msg)
}

// afterStop shows the workflows page with what a stop did.
func (s *Server) afterStop(w http.ResponseWriter, r *http.Request, code int, err error, done string) {
	if code == http.StatusInternalServerError {
		s.log.Error("stop", "path", r.URL.Path, "err", err)
	}
	d, ok := s.workflowsData(w, r)
	if !ok {
		return
	}
	d.Notice = done
	if err != nil {
		d.Notice, d.Bad = shown(code, err), true
	}
	s.render(w, code, "workflows", d)
}

// Stoppable reports whether a delegation has something to stop.
func (d Delegation) Stoppable() bool { return d.Session.Active() }
