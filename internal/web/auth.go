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
)

// cookieName is the session cookie's name.
const cookieName = "collab_session"

// auth holds the one-time sign-in token and the sessions, in memory.
type auth struct {
	secure bool
	tokens Tokens // long-lived bearer tokens

	mu       sync.Mutex
	signIn   string // the one-time token; used once, then spent
	spent    bool
	sessions map[string]string // session id → person
}

func newAuth(secure bool, tokens Tokens) (*auth, error) {
	t, err := token()
	if err != nil {
		return nil, err
	}
	return &auth{secure: secure, tokens: tokens, signIn: t, sessions: map[string]string{}}, nil
}

// token returns 32 random bytes in hex.
func token() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// redeem spends the sign-in token t and returns a new session for person.
func (a *auth) redeem(t, person string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.spent || subtle.ConstantTimeCompare([]byte(t), []byte(a.signIn)) != 1 {
		return "", false
	}
	id, err := token()
	if err != nil {
		return "", false
	}
	a.spent = true
	a.sessions[id] = person
	return id, true
}

// person returns the person of the request's session (cookie or
// Authorization: Bearer) or long-lived token (Bearer), or "".
func (a *auth) person(r *http.Request) string {
	id := ""
	if c, err := r.Cookie(cookieName); err == nil {
		id = c.Value
	} else if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		id = strings.TrimPrefix(h, "Bearer ")
	}
	if id == "" {
		return ""
	}
	p := a.session(id)
	if p == "" {
		p = a.tokens.Lookup(id)
	}
	return p
}

// session returns the person of session id, or "".
func (a *auth) session(id string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
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
		signInPage(w, http.StatusUnauthorized, "This sign-in link is not valid or was used already.")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: id, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.auth.secure,
	})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signInPage is the plain page a browser without a session gets.
func signInPage(w http.ResponseWriter, code int, why string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte("<!doctype html>\n<title>collab: sign in</title>\n<h1>Sign in</h1>\n<p>" + why +
		" Open the sign-in URL that <code>collab serve</code> printed when it started.</p>\n"))
}

func isAPI(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/api/") }

// refuse answers an error: JSON {"error"} under /api/ and at /mcp, plain
// text elsewhere.
func refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if isAPI(r) || r.URL.Path == "/mcp" {
		writeJSON(w, code, map[string]string{"error": msg})
		return
	}
	http.Error(w, msg, code)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
