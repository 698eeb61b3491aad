package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/task"
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
