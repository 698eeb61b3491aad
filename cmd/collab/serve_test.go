package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeListenRules: a non-loopback listener needs TLS or
// --insecure-http; half a TLS pair is a usage error, and so is a
// negative per-person or per-token cap.
func TestServeListenRules(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root}
	for _, args := range [][]string{
		{"serve", "--person", "alice", "--listen", "0.0.0.0:0"},
		{"serve", "--person", "alice", "--listen", "[::]:0"},
		{"serve", "--person", "alice", "--listen", "192.0.2.1:8765"},
		{"serve", "--person", "alice", "--tls-cert", "c.pem"},
		{"serve", "--person", "alice", "--listen", "nonsense"},
		{"serve", "--person", "alice", "--max-streams-per-person", "-1"},
		{"serve", "--person", "alice", "--max-mcp-per-token", "-1"},
	} {
		r := runCollab(t, env, "", args...)
		if r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d; stderr %q", args, r.code, exitUsage, r.stderr)
		}
	}
	if r := runCollab(t, env, "", "serve", "--listen", "0.0.0.0:0", "--person", "alice"); !strings.Contains(r.stderr, "--insecure-http") {
		t.Errorf("the refusal does not name the way out: %q", r.stderr)
	}
}

// serveForTest runs collab serve with args until the test ends and
// returns the sign-in URL it printed.
func serveForTest(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		err := run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &out, &errb)
		done <- exitCode(err, &errb)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve ended with exit %d: %s", code, errb.String())
		}
	})
	for i := 0; i < 500; i++ {
		for _, line := range strings.Split(out.String(), "\n") {
			if strings.Contains(line, "/signin?token=") {
				return strings.TrimSpace(line)
			}
		}
		select {
		case code := <-done:
			t.Fatalf("serve ended with exit %d: %s", code, errb.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("no sign-in URL printed: %q %q", out.String(), errb.String())
	return ""
}

// TestServeSignIn: the printed URL signs a browser in once; the session
// then reaches the API as the person.
func TestServeSignIn(t *testing.T) {
	root := newTree(t)
	url := serveForTest(t, map[string]string{"COLLAB_ROOT": root}, "--person", "alice")
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("sign-in URL %q", url)
	}
	base := url[:strings.Index(url, "/signin")]
	if resp, err := http.Get(base + "/api/session"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a session: %v %v", resp, err)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(url)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("sign in: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = c.Get(base + "/api/session")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("with the session: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp, err := http.Get(url); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the token worked twice: %v %v", resp, err)
	}
}

// TestServeToken: token new prints a token that reaches the API as its
// person; ls lists it; rm revokes it.
func TestServeToken(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "XDG_CONFIG_HOME": t.TempDir()}
	r := runCollab(t, env, "", "serve", "token", "new", "--person", "bob")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "collab_") {
		t.Fatalf("token new: %+v", r)
	}
	secret := strings.TrimSpace(r.stdout)
	ls := runCollab(t, env, "", "serve", "token", "ls")
	id, _, _ := strings.Cut(ls.stdout, "\t")
	if ls.code != 0 || !strings.Contains(ls.stdout, "\tbob\t") || strings.Contains(ls.stdout, secret) {
		t.Fatalf("token ls: %+v", ls)
	}
	url := serveForTest(t, env, "--person", "alice")
	base := url[:strings.Index(url, "/signin")]
	get := func() int {
		req, _ := http.NewRequest("GET", base+"/api/session", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != http.StatusOK {
		t.Errorf("with the token: %d", code)
	}
	if r := runCollab(t, env, "", "serve", "token", "rm", id); r.code != 0 {
		t.Fatalf("token rm: %+v", r)
	}
	if code := get(); code != http.StatusUnauthorized {
		t.Errorf("with a revoked token: %d", code)
	}
	if r := runCollab(t, env, "", "serve", "token", "rm", id); r.code != exitNothing {
		t.Errorf("rm twice: %+v", r)
	}
	for _, args := range [][]string{{"serve", "token"}, {"serve", "token", "bad"}, {"serve", "token", "rm"}, {"serve", "token", "new", "--person", "no body"}} {
		if r := runCollab(t, env, "", args...); r.code != exitUsage {
			t.Errorf("%v: %+v", args, r)
		}
	}
}

// bearerTransport adds Authorization: Bearer to every request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeAgentToken: token new --agent makes a token for /mcp only; over
// it the SDK's client posts as the agent, signed with the agent's default
// key, on the token's channel; ls shows the kind; rm revokes it.
func TestServeAgentToken(t *testing.T) {
	root := newTree(t)
	env := keyEnv(t, root)
	newKey(t, env, "claude")
	r := runCollab(t, env, "", "serve", "token", "new", "--agent", "claude", "--channel", "dev")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "collab_") || !strings.Contains(r.stderr, "agent token") {
		t.Fatalf("token new --agent: %+v", r)
	}
	secret := strings.TrimSpace(r.stdout)
	ls := runCollab(t, env, "", "serve", "token", "ls")
	id, _, _ := strings.Cut(ls.stdout, "\t")
	if ls.code != 0 || !strings.Contains(ls.stdout, "\tclaude\tagent\t") || !strings.HasSuffix(ls.stdout, "\tdev\n") || strings.Contains(ls.stdout, secret) {
		t.Fatalf("token ls: %+v", ls)
	}
	url := serveForTest(t, env, "--person", "alice")
	base := url[:strings.Index(url, "/signin")]

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()
	connect := func() (*mcp.ClientSession, error) {
		tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport(secret)}, MaxRetries: -1}
		return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, tr, nil)
	}
	cs, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "channel_send", Arguments: map[string]any{"message": "over http"}})
	if err != nil || res.IsError {
		t.Fatalf("channel_send: %+v, %v", res, err)
	}
	cs.Close()
	if m := onlyMessage(t, root, "dev"); m.From != "claude" || m.Signature == nil || m.Content.Text != "over http" {
		t.Errorf("posted %+v", m)
	}
	if r := runCollab(t, env, "", "verify", "--channel", "dev"); r.code != 0 || !strings.Contains(r.stdout, "1 verified") {
		t.Errorf("verify: exit %d, %q", r.code, r.stdout)
	}
	// Not a key to the API.
	req, _ := http.NewRequest("GET", base+"/api/session", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("an agent token at /api/session: %v %v", resp, err)
	} else {
		var e struct{ Error string }
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if !strings.Contains(e.Error, "/mcp") {
			t.Errorf("refusal %q", e.Error)
		}
	}
	if r := runCollab(t, env, "", "serve", "token", "rm", id); r.code != 0 {
		t.Fatalf("token rm: %+v", r)
	}
	if _, err := connect(); err == nil {
		t.Error("connected with a revoked token")
	}
	for _, args := range [][]string{
		{"serve", "token", "new", "--agent", "no body"},
		{"serve", "token", "new", "--agent", "claude", "--channel", "../x"},
		{"serve", "token", "new", "--agent", "claude", "--person", "bob"},
		{"serve", "token", "new", "--person", "bob", "--channel", "dev"},
	} {
		if r := runCollab(t, env, "", args...); r.code != exitUsage {
			t.Errorf("%v: %+v", args, r)
		}
	}
}
