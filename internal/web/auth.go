package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
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
	signInTTL time.Duration
	now       func() time.Time
	failures  *limiter // failed token sign-ins per client address

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
		idle: cfg.SessionIdle, max: cfg.SessionMax, signInTTL: cfg.SignInTTL, now: time.Now,
		signIn: t, sessions: map[string]*session{}}
	a.signInUntil = a.now().Add(cfg.SignInTTL)
	a.failures = newLimiter(signInBurst, signInRefill, func() time.Time { return a.now() })
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

// current returns the one-time sign-in token and when it stops working.
func (a *auth) current() (string, time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.signIn, a.signInUntil
}

// renew replaces the one-time sign-in token, spent or not, with a fresh
// one good for the sign-in TTL from now, and returns it and its end.
func (a *auth) renew() (string, time.Time, error) {
	t, err := token()
	if err != nil {
		return "", time.Time{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.signIn, a.signInUntil, a.spent = t, a.now().Add(a.signInTTL), false
	return a.signIn, a.signInUntil, nil
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
	id, ok := a.start(person, now)
	a.spent = ok
	return id, ok
}

// start makes a session for person and returns its id; a.mu is held.
// The ended sessions go.
func (a *auth) start(person string, now time.Time) (string, bool) {
	id, err := token()
	if err != nil {
		return "", false
	}
	for k, s := range a.sessions {
		if a.expired(s, now) {
			delete(a.sessions, k)
		}
	}
	a.sessions[id] = &session{person: person, created: now, used: now}
	return id, true
}

// startFor makes a session for person (signed in with a token).
func (a *auth) startFor(person string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.start(person, a.now())
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
			signInPage(w, http.StatusUnauthorized, "")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), personKey{}, p)))
	})
}

// NewSignIn replaces the one-time sign-in URL with a fresh one (the old
// one stops working) and returns its path and query, as SignInPath, and
// when it stops working. collab serve calls it on SIGHUP.
func (s *Server) NewSignIn() (string, time.Time, error) {
	t, until, err := s.auth.renew()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("web: new sign-in URL: %w", err)
	}
	return signInPath(t), until, nil
}

func signInPath(token string) string { return "/signin?token=" + token }

// signin exchanges the one-time token for a session cookie and sends the
// browser to the page.
func (s *Server) signin(w http.ResponseWriter, r *http.Request) {
	id, ok := s.auth.redeem(r.URL.Query().Get("token"), s.cfg.Person)
	if !ok {
		signInPage(w, http.StatusUnauthorized, "This sign-in link is not valid, has expired or was used already.")
		return
	}
	s.auth.signedIn(w, r, id)
}

// signinToken signs in with a person's long-lived token, typed into the
// sign-in page's form (POST /signin, behind the cross-site check), and
// sends the browser to the page. The token is checked as a Bearer one is
// (its SHA-256, compared in constant time: Tokens.Find). An agent's token
// is refused (403): agents use /mcp. A wrong one gets the sign-in page
// again, 401, saying no more than that. Each address has signInBurst
// tries, one more every signInRefill; a sign-in gives its try back, and
// past them it is 429 with Retry-After, the token not looked at.
func (s *Server) signinToken(w http.ResponseWriter, r *http.Request) {
	client := clientKey(r)
	if ok, wait := s.auth.failures.take(client); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
		signInPage(w, http.StatusTooManyRequests, "Too many failed sign-ins from this address: wait a minute, then try again.")
		return
	}
	rec, ok := s.auth.tokens.Find(strings.TrimSpace(r.PostFormValue("token")))
	switch {
	case !ok:
		s.log.Warn("token sign-in refused", "client", client)
		signInPage(w, http.StatusUnauthorized, "That token did not sign you in.")
	case rec.IsAgent():
		s.log.Warn("token sign-in refused: an agent's token", "client", client, "token", rec.ID)
		signInPage(w, http.StatusForbidden, "That is an agent's token: agents reach /mcp only. Sign in with a person's token.")
	default:
		id, ok := s.auth.startFor(rec.Person)
		if !ok {
			s.log.Error("token sign-in: no session id", "person", rec.Person)
			refuse(w, r, http.StatusInternalServerError, "")
			return
		}
		s.auth.failures.refund(client)
		s.log.Info("signed in with a token", "person", rec.Person, "token", rec.ID, "client", client)
		s.auth.signedIn(w, r, id)
	}
}

// signedIn sets session id's cookie and sends the browser to the page.
func (a *auth) signedIn(w http.ResponseWriter, r *http.Request, id string) {
	a.setCookie(w, id, int(a.max/time.Second))
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

// signInPage is the plain page a browser without a session gets
// (templates/signin.html): why, when not "", says what went wrong.
func signInPage(w http.ResponseWriter, code int, why string) {
	var b bytes.Buffer
	if err := pageTemplates.ExecuteTemplate(&b, "signin", struct{ Error string }{why}); err != nil {
		http.Error(w, internalError, http.StatusInternalServerError) // a template that cannot run: a test catches it
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
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
