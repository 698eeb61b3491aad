package web

import "net/http"

func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	refuse(w, r, http.StatusNotImplemented, "not yet")
}
