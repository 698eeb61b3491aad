package web

import "net/http"

// routePages adds the page app's routes to mux; every route it adds is
// behind the sign-in (see Server.Handler).
func (s *Server) routePages(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", s.page)
}

// page serves the page app. A placeholder until the page code lands.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("collab: the dashboard page is not built yet; the API is under /api/\n"))
}
