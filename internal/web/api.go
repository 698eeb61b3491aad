package web

import "net/http"

// routeAPI adds the JSON API's routes to mux.
func (s *Server) routeAPI(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/session", s.apiSession)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		refuse(w, r, http.StatusNotFound, "no such API endpoint")
	})
}

// apiSession answers who the session posts as.
func (s *Server) apiSession(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"person": personOf(r), "signs": s.cfg.Signer != nil})
}
