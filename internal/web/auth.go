package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Lifetimes of a session and of the printed sign-in URL: Config's zero
// fields.
const (
	DefaultSessionIdle = 12 * time.Hour     // a session unused this long ends
	DefaultSessionMax  = 7 * 24 * time.Hour // and any session this old
	DefaultSignInTTL   = 10 * time.Minute   // the sign-in URL works this long
)

// cookiePrefix starts the session cookie's name; the rest is the server's
// random id (cookieName), so a cookie set by or for a server on another
// port of the same host, which the browser sends here too (cookies do not
// isolate ports), is never read.
const cookiePrefix = "collab_session_"

// session is one signed-in browser (or cookie jar).
type session struct {
	person        string
	created, used time.Time
}

// auth holds the one-time sign-in token and the sessions, in memory.
type auth struct {
	secure    bool
	tokens    Tokens // long-lived bearer tokens
	cookie    string // this server's session cookie name (cookieName)
	idle, max time.Duration
	now       func() time.Time

	mu          sync.Mutex
	signIn      string // the one-time token; used once, then spent
	signInUntil time.Time
	spent       bool
	sessions    map[string]*session // session id → session
}

func newAuth(cfg Config) (*auth, error) {
	t, err := token()
	if err != nil {
		return nil, err
	}
	var id [6]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	a := &auth{secure: cfg.TLS, tokens: cfg.Tokens, cookie: cookieName(cfg.TLS, hex.EncodeToString(id[:])),
		idle: cfg.SessionIdle, max: cfg.SessionMax, now: time.Now,
		signIn: t, sessions: map[string]*session{}}
	a.signInUntil = a.now().Add(cfg.SignInTTL)
	return a, nil
}

// cookieName is the session cookie's name for the server with random id:
// under TLS with the __Host- prefix, which a browser keeps only with
// Secure, Path=/ and no Domain, so no other host can set it.
func cookieName(secure bool, id string) string {
	if secure {
		return "__Host-" + cookiePrefix + id
	}
	return cookiePrefix + id
}

// token returns 32 random bytes in hex.
func token() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// redeem spends the sign-in token t, while it lasts, and returns a new
// session for person.
func (a *auth) redeem(t, person string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	if a.spent || !now.Before(a.signInUntil) || subtle.ConstantTimeCompare([]byte(t), []byte(a.signIn)) != 1 {
		return "", false
	}
	id, err := token()
	if err != nil {
		return "", false
	}
	a.spent = true
	for k, s := range a.sessions {
		if a.expired(s, now) {
			delete(a.sessions, k)
		}
	}
	a.sessions[id] = &session{person: person, created: now, used: now}
	return id, true
}

// expired reports whether s has ended at now: unused for idle, or older
// than max.
func (a *auth) expired(s *session, now time.Time) bool {
	return now.Sub(s.used) >= a.idle || now.Sub(s.created) >= a.max
}

// person returns the person of the request's session (this server's
// cookie, or Authorization: Bearer) or long-lived token (Bearer only), or
// "". A cookie holds nothing but a session id.
func (a *auth) person(r *http.Request) string {
	for _, c := range r.CookiesNamed(a.cookie) {
		if p := a.session(c.Value); p != "" {
			return p
		}
	}
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if p := a.session(t); p != "" {
			return p
		}
		return a.tokens.Lookup(t)
	}
	return ""
}

// session returns the person of session id, or "" when there is none or
// it has expired (then it is gone); a use keeps it from idling out.
func (a *auth) session(id string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[id]
	if !ok {
		return ""
	}
	now := a.now()
	if a.expired(s, now) {
		delete(a.sessions, id)
		return ""
	}
	s.used = now
	return s.person
}

// end removes the sessions of the request's cookies.
func (a *auth) end(r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range r.CookiesNamed(a.cookie) {
		delete(a.sessions, c.Value)
	}
}

// setCookie sets (maxAge > 0) or clears (maxAge < 0) the session cookie.
func (a *auth) setCookie(w http.ResponseWriter, id string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: a.cookie, Value: id, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: a.secure,
	})
}

// isAgentToken reports whether the request carries an agent's token.
func (a *auth) isAgentToken(r *http.Request) bool {
	t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	rec, ok := a.tokens.Find(t)
	return ok && rec.IsAgent()
}

type personKey struct{}

// personOf returns the signed-in person of a request that passed require.
func personOf(r *http.Request) string {
	p, _ := r.Context().Value(personKey{}).(string)
	return p
}

// require lets through only requests with a session.
func (a *auth) require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := a.person(r)
		if p == "" && a.isAgentToken(r) {
			refuse(w, r, http.StatusForbidden, "an agent's token reaches /mcp only")
			return
		}
		if p == "" {
			if isAPI(r) {
				refuse(w, r, http.StatusUnauthorized, "not signed in: open the sign-in URL 'collab serve' printed")
				return
			}
			signInPage(w, http.StatusUnauthorized, "Not signed in.")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), personKey{}, p)))
	})
}

// signin exchanges the one-time token for a session cookie and sends the
// browser to the page.
func (s *Server) signin(w http.ResponseWriter, r *http.Request) {
	id, ok := s.auth.redeem(r.URL.Query().Get("token"), s.cfg.Person)
	if !ok {
		signInPage(w, http.StatusUnauthorized, "This sign-in link is not valid, has expired or was used already.")
		return
	}
	s.auth.setCookie(w, id, int(s.auth.max/time.Second))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signout ends the request's session, here and in the browser, and sends
// it to the page, which then asks to sign in. A POST: the cross-site
// check (sameOrigin) keeps another site from signing a person out.
func (s *Server) signout(w http.ResponseWriter, r *http.Request) {
	s.auth.end(r)
	s.auth.setCookie(w, "", -1)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signInPage is the plain page a browser without a session gets.
func signInPage(w http.ResponseWriter, code int, why string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte("<!doctype html>\n<title>collab: sign in</title>\n<h1>Sign in</h1>\n<p>" + why +
		" Open the sign-in URL that <code>collab serve</code> printed when it started" +
		" (it works once, for a short while: a restart prints a new one).</p>\n"))
}

func isAPI(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/api/") }

// internalError is all a client is told of a 500: the detail (often a
// path on the server's host) goes to the server's log (Server.fail).
const internalError = "internal error (the server's log has the detail)"

// refuse answers an error: JSON {"error"} under /api/ and at /mcp, plain
// text elsewhere. A 500 says only internalError, whatever msg holds: its
// caller logs the detail.
func refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if code == http.StatusInternalServerError {
		msg = internalError
	}
	if isAPI(r) || r.URL.Path == "/mcp" {
		writeJSON(w, code, map[string]string{"error": msg})
		return
	}
	http.Error(w, msg, code)
}

// shown is what a page shows of err, answered with code: a 500's detail
// stays in the log (logged by the caller).
func shown(code int, err error) string {
	if code == http.StatusInternalServerError {
		return internalError
	}
	return err.Error()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
