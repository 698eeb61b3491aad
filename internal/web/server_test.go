package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// testServer is a Server on httptest with a signed-in client.
type testServer struct {
	*Server
	ts     *httptest.Server
	client *http.Client // signed in
	root   tree.Root
}

func newTestServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = tree.Root(t.TempDir())
		if err := os.MkdirAll(cfg.Root.Channels(), 0o700); err != nil {
			t.Fatal(err)
		}
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
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(ts.URL + s.SignInPath())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sign in: %s", resp.Status)
	}
	return &testServer{Server: s, ts: ts, client: c, root: cfg.Root}
}

// do sends a request with the session and returns the status and body.
func (ts *testServer) do(t *testing.T, method, path, body string, hdr ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.ts.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// jsonError returns the error member of a JSON error body.
func jsonError(t *testing.T, body string) string {
	t.Helper()
	var e struct{ Error string }
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" {
		t.Fatalf("not a JSON error: %q", body)
	}
	return e.Error
}

func TestSignInOnce(t *testing.T) {
	ts := newTestServer(t, Config{})
	// The token is spent: a second browser gets nothing.
	resp, err := http.Get(ts.ts.URL + ts.SignInPath())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("second sign-in: %s, cookies %v", resp.Status, resp.Cookies())
	}
	if code, body := ts.do(t, "GET", "/api/session", ""); code != 200 || !strings.Contains(body, `"person":"alice"`) {
		t.Errorf("session: %d %s", code, body)
	}
}

func TestSignInWrongToken(t *testing.T) {
	s, err := New(Config{Root: tree.Root(t.TempDir()), Person: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for _, q := range []string{"", "?token=", "?token=00", "?token=" + strings.Repeat("0", 64)} {
		resp, err := http.Get(ts.URL + "/signin" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
			t.Errorf("%q: %s %v", q, resp.Status, resp.Cookies())
		}
	}
	// A wrong guess does not spend the real token.
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(ts.URL + s.SignInPath())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(resp.Cookies()) != 1 {
		t.Errorf("the real token no longer works")
	}
}

func TestSessionCookie(t *testing.T) {
	for _, tls := range []bool{false, true} {
		s, err := New(Config{Root: tree.Root(t.TempDir()), Person: "alice", TLS: tls})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, localRequest("GET", s.SignInPath()))
		cs := rec.Result().Cookies()
		if len(cs) != 1 {
			t.Fatalf("cookies %v", cs)
		}
		c := cs[0]
		prefix := "collab_session_"
		if tls {
			prefix = "__Host-collab_session_"
		}
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure != tls || len(c.Value) < 32 ||
			!strings.HasPrefix(c.Name, prefix) || len(c.Name) <= len(prefix) || c.Path != "/" || c.Domain != "" || c.MaxAge <= 0 {
			t.Errorf("tls=%v: cookie %+v", tls, c)
		}
		// The cookie's value also works as a bearer token.
		req := localRequest("GET", "/api/session")
		req.Header.Set("Authorization", "Bearer "+c.Value)
		rec = httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Errorf("bearer: %d", rec.Code)
		}
	}
}

func TestUnauthorized(t *testing.T) {
	s, err := New(Config{Root: tree.Root(t.TempDir()), Person: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()
	for _, c := range []struct{ method, path, auth, cookie string }{
		{"GET", "/api/channels", "", ""},
		{"GET", "/api/session", "Bearer nope", ""},
		{"GET", "/api/session", "", "nope"},
		{"POST", "/api/channels/dev/messages", "", ""},
		{"GET", "/api/nothing", "", ""},
	} {
		req := localRequest(c.method, c.path)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		if c.cookie != "" {
			req.AddCookie(&http.Cookie{Name: s.auth.cookie, Value: c.cookie})
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %s", c.method, c.path, rec.Code, rec.Header().Get("Content-Type"))
		}
		jsonError(t, rec.Body.String())
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, localRequest("GET", "/"))
	if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "Sign in") || strings.Contains(rec.Body.String(), "placeholder") {
		t.Errorf("page without a session: %d %q", rec.Code, rec.Body.String())
	}
}

func TestHeaders(t *testing.T) {
	ts := newTestServer(t, Config{})
	for _, path := range []string{"/", "/api/session", "/api/nothing", "/signin"} {
		resp, err := ts.client.Get(ts.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := resp.Header
		if h.Get("Content-Security-Policy") != contentSecurityPolicy || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
	for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"} {
		if !strings.Contains(contentSecurityPolicy, want) {
			t.Errorf("CSP lacks %q", want)
		}
	}
	if strings.Contains(contentSecurityPolicy, "unsafe") {
		t.Errorf("CSP allows unsafe: %s", contentSecurityPolicy)
	}
}

func TestCrossSitePost(t *testing.T) {
	ts := newTestServer(t, Config{})
	for _, hdr := range [][]string{
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
		{"Origin", "http://evil.example"},
		{"Origin", "null"},
	} {
		code, body := ts.do(t, "POST", "/api/channels/dev/messages", `{"text":"hi"}`, hdr...)
		if code != http.StatusForbidden {
			t.Errorf("%v: %d %s", hdr, code, body)
			continue
		}
		jsonError(t, body)
	}
	if _, err := os.Stat(ts.root.Channel("dev")); err == nil {
		t.Errorf("a refused post wrote the channel")
	}
	// A browser's same-origin form post under Referrer-Policy no-referrer
	// says Origin: null; its Sec-Fetch-Site decides.
	if code, body := ts.do(t, "POST", "/api/channels/dev/messages", `{"text":"hi"}`,
		"Sec-Fetch-Site", "same-origin", "Origin", "null"); code >= 300 {
		t.Errorf("same-origin post with Origin null: %d %s", code, body)
	}
}

func TestBodyLimit(t *testing.T) {
	ts := newTestServer(t, Config{})
	// Small JSON in a big body: the limit, not the message cap, refuses
	// it, whether the length is declared or not.
	pad := strings.Repeat(" ", MaxBody)
	code, body := ts.do(t, "POST", "/api/channels/dev/messages", `{"text":"hi"}`+pad)
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("big body: %d %s", code, body)
	}
	req, err := http.NewRequest("POST", ts.ts.URL+"/api/channels/dev/messages", io.MultiReader(strings.NewReader(`{"text":`+pad), strings.NewReader(`"hi"}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1 // chunked: no length declared
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("big chunked body: %s", resp.Status)
	}
	if es, _ := os.ReadDir(ts.root.Channel("dev")); len(es) > 0 {
		t.Errorf("a refused post wrote %v", es)
	}
}

func TestHTTPServerTimeouts(t *testing.T) {
	ts := newTestServer(t, Config{})
	hs := ts.HTTPServer()
	if hs.ReadHeaderTimeout <= 0 || hs.ReadTimeout <= 0 || hs.WriteTimeout <= 0 || hs.IdleTimeout <= 0 || hs.MaxHeaderBytes <= 0 {
		t.Errorf("unbounded server: %+v", hs)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8765": true, "[::1]:1": true, "localhost:80": true, "127.1.2.3:0": true,
		"0.0.0.0:8765": false, "[::]:1": false, ":8765": false, "192.0.2.1:80": false, "example.com:80": false, "bad": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v", addr, got)
		}
	}
}
