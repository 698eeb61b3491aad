package web

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// tokenServer is a server whose tokens file holds a person's token, for
// bob, and an agent's, for reviewer, on its clock.
type tokenServer struct {
	s             *Server
	h             http.Handler
	clk           *clock
	person, agent string
}

func newTokenServer(t *testing.T) *tokenServer {
	t.Helper()
	toks := Tokens{Path: filepath.Join(t.TempDir(), "tokens.json")}
	person, _, err := toks.New("bob")
	if err != nil {
		t.Fatal(err)
	}
	agent, _, err := toks.NewAgent("reviewer", "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Root: tree.Root(t.TempDir()), Person: "alice", Tokens: toks})
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.auth.now = clk.now
	return &tokenServer{s: s, h: s.Handler(), clk: clk, person: person, agent: agent}
}

// signInForm posts the sign-in page's form with token from the client
// address from (as http.Server sets RemoteAddr), as a browser posts it
// from the page (Sec-Fetch-Site same-origin), and returns the response.
func (ts *tokenServer) signInForm(from, token string) *http.Response {
	return ts.post(from, token, "same-origin")
}

func (ts *tokenServer) post(from, token, site string) *http.Response {
	r := httptest.NewRequest("POST", "/signin", strings.NewReader(url.Values{"token": {token}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", site)
	r.Host = "127.0.0.1:8765"
	r.RemoteAddr = from
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8765}
	r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(local)))
	rec := httptest.NewRecorder()
	ts.h.ServeHTTP(rec, r)
	return rec.Result()
}

// session returns who the cookie signs in as at /api/session, or the
// status when it signs no one in.
func (ts *tokenServer) session(c *http.Cookie) string {
	r := localRequest("GET", "/api/session")
	r.AddCookie(c)
	rec := httptest.NewRecorder()
	ts.h.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		return fmt.Sprint(rec.Code)
	}
	return strings.TrimSpace(rec.Body.String())
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestSignInPageHasTheTokenForm: a page without a session is the sign-in
// page, with a form that posts a token (a password field) to /signin.
func TestSignInPageHasTheTokenForm(t *testing.T) {
	ts := newTokenServer(t)
	for _, path := range []string{"/", "/c/dev", "/signin?token=nope"} {
		rec := httptest.NewRecorder()
		ts.h.ServeHTTP(rec, localRequest("GET", path))
		b := rec.Body.String()
		for _, want := range []string{`<h1>Sign in</h1>`, `<form class="signin" method="post" action="/signin">`,
			`<input type="password" id="token" name="token"`, "Sign in with a token", "kill -HUP"} {
			if rec.Code != http.StatusUnauthorized || !strings.Contains(b, want) {
				t.Errorf("%s: %d, no %q in\n%s", path, rec.Code, want, b)
			}
		}
	}
}

// TestTokenFormSignsIn: a person's token typed into the sign-in page's
// form sets a session cookie for that person (not the server's --person),
// holding a session id, not the token; blanks around a pasted token do
// not matter.
func TestTokenFormSignsIn(t *testing.T) {
	for _, typed := range []string{"%s", " %s\n"} {
		ts := newTokenServer(t)
		resp := ts.signInForm("192.0.2.7:40000", fmt.Sprintf(typed, ts.person))
		resp.Body.Close()
		cs := resp.Cookies()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || len(cs) != 1 {
			t.Fatalf("%q: %s %v", typed, resp.Status, cs)
		}
		if cs[0].Name != ts.s.auth.cookie || cs[0].Value == ts.person || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode {
			t.Errorf("cookie %+v", cs[0])
		}
		if got := ts.session(cs[0]); got != `{"person":"bob","signs":false}` {
			t.Errorf("the session: %s", got)
		}
	}
}

// TestTokenFormRefuses: what signs no one in, and says no more than it
// must: an agent's token (403: agents use /mcp), and every wrong token
// the same 401 sign-in page, whatever was wrong with it.
func TestTokenFormRefuses(t *testing.T) {
	ts := newTokenServer(t)
	wrong := "That token did not sign you in."
	for _, c := range []struct {
		name  string
		token string
		code  int
		says  string
	}{
		{"agent's token", ts.agent, http.StatusForbidden, "agent&#39;s token: agents reach /mcp only"},
		{"empty", "", http.StatusUnauthorized, wrong},
		{"not a token", "hunter2", http.StatusUnauthorized, wrong},
		{"unknown token", "collab_" + strings.Repeat("0", 64), http.StatusUnauthorized, wrong},
		{"a token with more", ts.person + "x", http.StatusUnauthorized, wrong},
		{"a token cut short", ts.person[:len(ts.person)-1], http.StatusUnauthorized, wrong},
		{"the one-time token", strings.TrimPrefix(ts.s.SignInPath(), "/signin?token="), http.StatusUnauthorized, wrong},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts.clk.add(time.Hour) // a full bucket for each
			resp := ts.signInForm("192.0.2.7:40000", c.token)
			b := readAll(resp)
			if resp.StatusCode != c.code || len(resp.Cookies()) != 0 {
				t.Errorf("%s %v, want %d and no cookie", resp.Status, resp.Cookies(), c.code)
			}
			if !strings.Contains(b, c.says) || !strings.Contains(b, `action="/signin"`) {
				t.Errorf("the page does not say %q, or has no form:\n%s", c.says, b)
			}
			if c.token != "" && strings.Contains(b, c.token) {
				t.Errorf("the page shows the token")
			}
		})
	}
}

// TestTokenFormCrossSite: the form is behind the cross-site check, so a
// page elsewhere cannot sign the browser in as the attacker's person.
func TestTokenFormCrossSite(t *testing.T) {
	ts := newTokenServer(t)
	resp := ts.post("192.0.2.7:40000", ts.person, "cross-site")
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("a cross-site post: %s %v", resp.Status, resp.Cookies())
	}
}

// TestTokenFormRateLimit: an address has signInBurst failed tries, then
// gets 429 with Retry-After and its token is not looked at (the right one
// included); another address is not held up; the bucket refills one try
// per signInRefill; a sign-in costs no try.
func TestTokenFormRateLimit(t *testing.T) {
	ts := newTokenServer(t)
	const mallory, alice = "198.51.100.9:5000", "192.0.2.7:40000"
	try := func(from, token string, want int) {
		t.Helper()
		resp := ts.signInForm(from, token)
		b := readAll(resp)
		if resp.StatusCode != want {
			t.Fatalf("%s: %s, want %d\n%s", from, resp.Status, want, b)
		}
		if want == http.StatusTooManyRequests && (resp.Header.Get("Retry-After") == "" || !strings.Contains(b, "Too many failed sign-ins")) {
			t.Errorf("429 without Retry-After or a clear page: %v\n%s", resp.Header, b)
		}
	}
	for range signInBurst {
		try(mallory, "collab_guess", http.StatusUnauthorized)
	}
	try(mallory, "collab_guess", http.StatusTooManyRequests)
	try(mallory, ts.person, http.StatusTooManyRequests)
	try("198.51.100.9:5001", ts.agent, http.StatusTooManyRequests) // the same address, another port
	try(alice, ts.person, http.StatusSeeOther)
	ts.clk.add(signInRefill)
	try(mallory, "collab_guess", http.StatusUnauthorized)
	try(mallory, "collab_guess", http.StatusTooManyRequests)
	// A sign-in gives its try back: alice signs in more than the burst.
	for range signInBurst + 2 {
		try(alice, ts.person, http.StatusSeeOther)
	}
}

// TestNewSignIn: a fresh one-time URL, as collab serve prints on SIGHUP,
// works once, for the sign-in TTL from when it was made, whether the last
// one was used or not; the last one stops working.
func TestNewSignIn(t *testing.T) {
	ts := newTokenServer(t)
	get := func(path string) int {
		t.Helper()
		rec := httptest.NewRecorder()
		ts.h.ServeHTTP(rec, localRequest("GET", path))
		return rec.Code
	}
	first := ts.s.SignInPath()
	if code := get(first); code != http.StatusSeeOther {
		t.Fatalf("the first URL: %d", code)
	}
	ts.clk.add(DefaultSignInTTL + time.Hour) // long after the first expired
	fresh, until, err := ts.s.NewSignIn()
	if err != nil {
		t.Fatal(err)
	}
	if fresh == first || fresh != ts.s.SignInPath() || !until.Equal(ts.clk.now().Add(DefaultSignInTTL)) || !until.Equal(ts.s.SignInExpires()) {
		t.Fatalf("fresh %q until %v; first %q", fresh, until, first)
	}
	unused, _, err := ts.s.NewSignIn()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{first, http.StatusUnauthorized},
		{fresh, http.StatusUnauthorized}, // replaced before it was used
		{unused, http.StatusSeeOther},
		{unused, http.StatusUnauthorized}, // once
	} {
		if code := get(c.path); code != c.want {
			t.Errorf("%s: %d, want %d", c.path, code, c.want)
		}
	}
	late, _, err := ts.s.NewSignIn()
	if err != nil {
		t.Fatal(err)
	}
	ts.clk.add(DefaultSignInTTL)
	if code := get(late); code != http.StatusUnauthorized {
		t.Errorf("a fresh URL past the TTL: %d", code)
	}
}

func TestClientKey(t *testing.T) {
	for _, c := range []struct{ remote, want string }{
		{"192.0.2.7:40000", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:40000", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"[::1]:80", "::/64"},
		{"not an address", "not an address"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if got := clientKey(r); got != c.want {
			t.Errorf("%s: %q, want %q", c.remote, got, c.want)
		}
	}
}

// TestLimiterBounded: many addresses do not grow the limiter past
// maxBuckets and the shared one; past it, new addresses share that
// bucket, and the ones that filled up again make room.
func TestLimiterBounded(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := newLimiter(2, time.Second, clk.now)
	for i := range maxBuckets + 100 {
		l.take(fmt.Sprint("a", i))
	}
	if n := len(l.buckets); n > maxBuckets+1 {
		t.Fatalf("%d buckets", n)
	}
	// The shared bucket had two tries for the 101 newcomers.
	if ok, wait := l.take("newcomer"); ok || wait <= 0 {
		t.Errorf("the shared bucket: %v %v", ok, wait)
	}
	clk.add(2 * time.Second) // every bucket full again
	if ok, _ := l.take("newcomer"); !ok || len(l.buckets) != 1 {
		t.Errorf("after the refill: %v, %d buckets", ok, len(l.buckets))
	}
}
