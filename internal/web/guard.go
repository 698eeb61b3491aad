package web

import "net/http"

// contentSecurityPolicy allows nothing but this server's own files: no
// inline script, no framing.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// headers sets the safety headers on every response.
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}

// sameOrigin refuses a request that changes something (any method but
// GET, HEAD, OPTIONS) when the browser says it comes from another site:
// the standard library's CrossOriginProtection (Sec-Fetch-Site other than
// same-origin or none; without it, an Origin whose host is not this
// request's Host). Clients that send neither (curl) pass: they carry no
// ambient cookie of a victim. A same-origin form post, whose Origin is
// "null" under Referrer-Policy no-referrer, passes on its Sec-Fetch-Site.
func sameOrigin(next http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse(w, r, http.StatusForbidden, "cross-site request refused")
	}))
	return p.Handler(next)
}

// limitBody bounds every request body to MaxBody.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBody {
			refuse(w, r, http.StatusRequestEntityTooLarge, "request body too large")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		next.ServeHTTP(w, r)
	})
}
