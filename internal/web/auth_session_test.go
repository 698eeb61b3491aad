package web

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/syncbuf"
)

// localRequest is a request as http.Server hands it to the handler when
// it came to 127.0.0.1:8765 for that host: with the local address in its
// context, which the Host check reads.
func localRequest(method, target string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.Host = "127.0.0.1:8765"
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8765}
	return r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(local)))
}

// clock is a time the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var noRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// signInCookie spends s's sign-in URL on ts and returns the cookie it
// set.
func signInCookie(t *testing.T, ts *httptest.Server, s *Server) *http.Cookie {
	t.Helper()
	c := &http.Client{CheckRedirect: noRedirect}
	resp, err := c.Get(ts.URL + s.SignInPath())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cs := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cs) != 1 {
		t.Fatalf("sign in: %s %v", resp.Status, cs)
	}
	return cs[0]
}

// status sends a GET of path to ts with the cookies and headers (name,
// value pairs) and returns the status.
func status(t *testing.T, ts *httptest.Server, path string, cookies []*http.Cookie, hdr ...string) int {
	t.Helper()
	req, err := http.NewRequest("GET", ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := (&http.Client{CheckRedirect: noRedirect}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func newAuthServer(t *testing.T, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = tree.Root(t.TempDir())
	}
	if cfg.Person == "" {
		cfg.Person = "alice"
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); ts.Close() })
	return s, ts
}

// TestTwoServersOneBrowser: two servers on two ports of one host, as a
// browser's cookie jar sees them (cookies do not isolate ports). Signing
// in to B does not sign the browser out of A (once both set
// "collab_session" and B's replaced A's), and each server reads only its
// own cookie: A's session id under B's cookie's name does not reach A.
func TestTwoServersOneBrowser(t *testing.T) {
	a, tsA := newAuthServer(t, Config{})
	b, tsB := newAuthServer(t, Config{})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(base, path string) int {
		t.Helper()
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(tsA.URL, a.SignInPath()); code != http.StatusOK {
		t.Fatalf("sign in to A: %d", code)
	}
	if code := get(tsB.URL, "/api/session"); code != http.StatusUnauthorized {
		t.Errorf("signed in to A only, B answers %d", code)
	}
	if code := get(tsB.URL, b.SignInPath()); code != http.StatusOK {
		t.Fatalf("sign in to B: %d", code)
	}
	if code := get(tsA.URL, "/api/session"); code != http.StatusOK {
		t.Errorf("signing in to B signed the browser out of A: %d", code)
	}
	u, _ := url.Parse(tsA.URL)
	cs := jar.Cookies(u)
	if len(cs) != 2 || cs[0].Name == cs[1].Name {
		t.Fatalf("the jar holds %v, want a cookie per server", cs)
	}
	var idA string
	for _, ck := range cs {
		if ck.Name == a.auth.cookie {
			idA = ck.Value
		}
	}
	if code := status(t, tsA, "/api/session", []*http.Cookie{{Name: b.auth.cookie, Value: idA}}); code != http.StatusUnauthorized {
		t.Errorf("A read a cookie named for B: %d", code)
	}
	for _, name := range []string{"collab_session", cookiePrefix + "0000"} {
		if code := status(t, tsA, "/api/session", []*http.Cookie{{Name: name, Value: idA}}); code != http.StatusUnauthorized {
			t.Errorf("A read cookie %q: %d", name, code)
		}
	}
	// A cookie of the right name tossed in front of the real one (another
	// port's page can set one for this host) does not hide it.
	if code := status(t, tsA, "/api/session", []*http.Cookie{{Name: a.auth.cookie, Value: "junk"}, {Name: a.auth.cookie, Value: idA}}); code != http.StatusOK {
		t.Errorf("a junk cookie before the real one: %d", code)
	}
}

// TestCookieHoldsOnlyASession: a person's long-lived token works as a
// bearer token, but as the value of the session cookie (which a page on
// another port of the host can set) it signs no one in; nor does a
// session id of another server.
func TestCookieHoldsOnlyASession(t *testing.T) {
	toks := Tokens{Path: filepath.Join(t.TempDir(), "serve-tokens.json")}
	secret, _, err := toks.New("mallory")
	if err != nil {
		t.Fatal(err)
	}
	s, ts := newAuthServer(t, Config{Tokens: toks})
	other, tsOther := newAuthServer(t, Config{})
	name := signInCookie(t, ts, s).Name
	otherID := signInCookie(t, tsOther, other).Value
	if code := status(t, ts, "/api/session", nil, "Authorization", "Bearer "+secret); code != http.StatusOK {
		t.Fatalf("the token as a bearer token: %d", code)
	}
	for _, v := range []string{secret, otherID, ""} {
		if code := status(t, ts, "/api/session", []*http.Cookie{{Name: name, Value: v}}); code != http.StatusUnauthorized {
			t.Errorf("cookie %s=%q: %d, want 401", name, v, code)
		}
	}
}

// TestSessionExpires: a session ends when unused for SessionIdle, and at
// SessionMax however much it is used; an ended one stays ended.
func TestSessionExpires(t *testing.T) {
	const idle, max = time.Hour, 3 * time.Hour
	for _, c := range []struct {
		name  string
		steps []time.Duration // uses, each after this long
		ok    bool            // the last one still signed in
	}{
		{"used within idle", []time.Duration{idle - time.Minute}, true},
		{"idle too long", []time.Duration{idle}, false},
		{"kept in use", []time.Duration{50 * time.Minute, 50 * time.Minute, 50 * time.Minute}, true},
		{"past the maximum", []time.Duration{50 * time.Minute, 50 * time.Minute, 50 * time.Minute, 31 * time.Minute}, false},
		{"once ended, ended", []time.Duration{idle, 0}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(Config{Root: tree.Root(t.TempDir()), Person: "alice", SessionIdle: idle, SessionMax: max})
			if err != nil {
				t.Fatal(err)
			}
			clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			s.auth.now = clk.now
			h := s.Handler()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, localRequest("GET", s.SignInPath()))
			ck := rec.Result().Cookies()
			if len(ck) != 1 || ck[0].MaxAge != int(max/time.Second) {
				t.Fatalf("sign in: %d %v", rec.Code, ck)
			}
			got := 0
			for _, d := range c.steps {
				clk.add(d)
				req := localRequest("GET", "/api/session")
				req.AddCookie(ck[0])
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				got = rec.Code
			}
			if want := map[bool]int{true: 200, false: 401}[c.ok]; got != want {
				t.Errorf("last use: %d, want %d", got, want)
			}
		})
	}
}

// TestSignInURLExpires: the printed URL works for SignInTTL only.
func TestSignInURLExpires(t *testing.T) {
	for _, c := range []struct {
		name  string
		after time.Duration
		code  int
	}{
		{"in time", 9 * time.Minute, http.StatusSeeOther},
		{"expired", 10 * time.Minute, http.StatusUnauthorized},
		{"long expired", 48 * time.Hour, http.StatusUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			s, err := New(Config{Root: tree.Root(t.TempDir()), Person: "alice", SignInTTL: 10 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			s.auth.now = clk.now
			s.auth.signInUntil = clk.now().Add(10 * time.Minute) // as New would have with this clock
			clk.add(c.after)
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, localRequest("GET", s.SignInPath()))
			if rec.Code != c.code || (c.code != http.StatusSeeOther) != (len(rec.Result().Cookies()) == 0) {
				t.Errorf("sign in after %v: %d %v, want %d", c.after, rec.Code, rec.Result().Cookies(), c.code)
			}
		})
	}
	s, err := New(Config{Root: tree.Root(t.TempDir()), Person: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(s.SignInExpires()); d <= DefaultSignInTTL-time.Minute || d > DefaultSignInTTL {
		t.Errorf("the sign-in URL expires in %v, want %v", d, DefaultSignInTTL)
	}
}

// TestSignOut: the sign-out post ends the session on the server (the
// cookie replayed gets 401) and clears the cookie; a cross-site one is
// refused and ends nothing.
func TestSignOut(t *testing.T) {
	s, ts := newAuthServer(t, Config{})
	ck := signInCookie(t, ts, s)
	post := func(hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+"/signout", nil)
		req.AddCookie(ck)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := (&http.Client{CheckRedirect: noRedirect}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("Sec-Fetch-Site", "same-site"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign-out from another port's page: %s", resp.Status)
	}
	if code := status(t, ts, "/api/session", []*http.Cookie{ck}); code != http.StatusOK {
		t.Fatalf("a refused sign-out ended the session: %d", code)
	}
	resp := post("Sec-Fetch-Site", "same-origin", "Origin", "null")
	cs := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" ||
		len(cs) != 1 || cs[0].Name != ck.Name || cs[0].MaxAge >= 0 || cs[0].Value != "" {
		t.Errorf("sign out: %s %q %v", resp.Status, resp.Header.Get("Location"), cs)
	}
	for _, c := range []struct {
		name string
		hdr  []string
		ck   []*http.Cookie
	}{
		{"cookie", nil, []*http.Cookie{ck}},
		{"bearer", []string{"Authorization", "Bearer " + ck.Value}, nil},
	} {
		if code := status(t, ts, "/api/session", c.ck, c.hdr...); code != http.StatusUnauthorized {
			t.Errorf("the %s of a signed-out session: %d", c.name, code)
		}
	}
}

// TestHostChecked: a request must name this server in its Host: its
// address and port, localhost on loopback, or a configured name; anything
// else (a DNS rebinding's name, another port) gets 421 before the sign-in.
func TestHostChecked(t *testing.T) {
	s, ts := newAuthServer(t, Config{Hosts: []string{"Dash.Example", "tunnel.example:9000"}})
	ck := signInCookie(t, ts, s)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.URL, "http://"))
	for _, c := range []struct {
		host string
		code int
	}{
		{"127.0.0.1:" + port, http.StatusOK},
		{"localhost:" + port, http.StatusOK},
		{"LOCALHOST.:" + port, http.StatusOK},
		{"[::1]:" + port, http.StatusOK},
		{"dash.example:" + port, http.StatusOK},
		{"tunnel.example:9000", http.StatusOK},
		{"evil.example:" + port, http.StatusMisdirectedRequest},
		{"127.0.0.1:1", http.StatusMisdirectedRequest},
		{"127.0.0.1", http.StatusMisdirectedRequest},
		{"localhost", http.StatusMisdirectedRequest},
		{"dash.example:9000", http.StatusMisdirectedRequest},
		{"tunnel.example:" + port, http.StatusMisdirectedRequest},
		{"192.0.2.1:" + port, http.StatusMisdirectedRequest},
		{"127.0.0.1:99999", http.StatusMisdirectedRequest},
	} {
		req, _ := http.NewRequest("GET", ts.URL+"/api/session", nil)
		req.Host = c.host
		req.AddCookie(ck)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("Host %q: %d %s, want %d", c.host, resp.StatusCode, body, c.code)
		}
	}
	if _, err := New(Config{Root: tree.Root(t.TempDir()), Person: "alice", Hosts: []string{"a b"}}); err == nil {
		t.Error("a host name with a space was taken")
	}
}

// TestHostAllowed: the rule itself, on addresses a test server cannot
// have (a non-loopback address; HTTPS's default port).
func TestHostAllowed(t *testing.T) {
	lan := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 443}
	v6 := &net.TCPAddr{IP: net.ParseIP("::1"), Port: 8765}
	for _, c := range []struct {
		host  string
		local net.Addr
		tls   bool
		names []string
		ok    bool
	}{
		{"192.0.2.7", lan, true, nil, true},
		{"192.0.2.7:443", lan, true, nil, true},
		{"192.0.2.7", lan, false, nil, false}, // port 80
		{"localhost:443", lan, true, nil, false},
		{"127.0.0.1:443", lan, true, nil, false},
		{"dash.example", lan, true, []string{"dash.example"}, true},
		{"other.example", lan, true, []string{"dash.example"}, false},
		{"[::1]:8765", v6, false, nil, true},
		{"localhost:8765", v6, false, nil, true},
		{"", v6, false, nil, false},
		{"[::1]:8765", nil, false, nil, false}, // no local address: refused
	} {
		err := hostAllowed(c.host, c.local, c.tls, c.names)
		if (err == nil) != c.ok {
			t.Errorf("hostAllowed(%q, %v, tls=%v, %v) = %v, want ok=%v", c.host, c.local, c.tls, c.names, err, c.ok)
		}
	}
}

// TestInternalErrorSaysNothing: a 500 tells the client nothing of its
// cause (a path on the server's host), on the API and on the pages; the
// server's log has it.
func TestInternalErrorSaysNothing(t *testing.T) {
	var logb syncBuf
	ts := newTestServer(t, Config{Logger: slog.New(slog.NewTextHandler(&logb, nil))})
	root := ts.root
	// The channels folder becomes a file: listing it fails, naming its
	// path.
	if err := os.Remove(root.Channels()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root.Channels(), []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/channels", ""},
		{"GET", "/", ""},
		{"GET", "/tasks", ""},
		{"POST", "/api/channels/dev/messages", `{"text":"hi"}`},
	} {
		code, body := ts.do(t, c.method, c.path, c.body)
		if code != http.StatusInternalServerError {
			t.Errorf("%s %s: %d %s, want 500", c.method, c.path, code, body)
			continue
		}
		if strings.Contains(body, string(root)) || strings.Contains(body, "not a directory") || !strings.Contains(body, internalError) {
			t.Errorf("%s %s: the 500 says %q", c.method, c.path, body)
		}
	}
	// The page's post box, which shows a refusal's reason.
	req, _ := http.NewRequest("POST", ts.ts.URL+"/c/dev/post", strings.NewReader("text=hi"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	if resp.StatusCode != http.StatusInternalServerError || strings.Contains(body, string(root)) || !strings.Contains(body, "internal error") {
		t.Errorf("page post: %s %q", resp.Status, body)
	}
	if !strings.Contains(logb.String(), string(root)) {
		t.Errorf("the log lacks the detail: %q", logb.String())
	}
}

// syncBuf is a log a server writes from its handlers' goroutines.
type syncBuf = syncbuf.Buffer
