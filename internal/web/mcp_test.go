package web

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/mcptest"
	"github.com/collabdev/collab/internal/transport/mcpserver"
)

// bearer adds Authorization: Bearer to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpConnect connects the SDK's client to url with token.
func mcpConnect(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// mcpCall calls tool as the SDK's client does (mcptest.Call).
var mcpCall = mcptest.Call

// mcpTestServer serves a tree with a token file; claude has a trusted key.
type mcpTestServer struct {
	*testServer
	toks   Tokens
	signer *signing.Signer
}

func newMCPTestServer(t *testing.T, cfg Config) *mcpTestServer {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(t.TempDir())
	if err := ring.Trust("claude", keyring.FormatPublic(pub)); err != nil {
		t.Fatal(err)
	}
	signer := signing.NewSigner("claude", priv)
	toks := Tokens{Path: filepath.Join(t.TempDir(), "serve-tokens.json")}
	cfg.Tokens = toks
	cfg.Verifier = signing.NewVerifier(ring)
	cfg.AgentSigner = func(agent string) (*signing.Signer, error) {
		if agent == "claude" {
			return signer, nil
		}
		return nil, nil
	}
	return &mcpTestServer{testServer: newTestServer(t, cfg), toks: toks, signer: signer}
}

func (m *mcpTestServer) agentToken(t *testing.T, agent, ch string) (string, TokenRecord) {
	t.Helper()
	secret, rec, err := m.toks.NewAgent(agent, ch)
	if err != nil {
		t.Fatal(err)
	}
	return secret, rec
}

// TestMCPToolsOverHTTP: /mcp serves the tools of `collab mcp`.
func TestMCPToolsOverHTTP(t *testing.T) {
	m := newMCPTestServer(t, Config{})
	secret, _ := m.agentToken(t, "claude", "dev")
	cs, err := mcpConnect(t, m.ts.URL+"/mcp", secret)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}

	stdio, err := mcpserver.New(mcpserver.Config{Root: m.root, Agent: "claude", Channel: "dev", Hops: -1})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go stdio.Run(ctx, st)
	local, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	want, err := local.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	describe := func(ts []*mcp.Tool) []string {
		var out []string
		for _, tool := range ts {
			schema, _ := json.Marshal(tool.InputSchema)
			out = append(out, tool.Name+" "+tool.Description+" "+string(schema))
		}
		slices.Sort(out)
		return out
	}
	if g, w := describe(got.Tools), describe(want.Tools); !slices.Equal(g, w) || len(g) < 10 {
		t.Errorf("tools over HTTP:\n%q\nwant those of collab mcp:\n%q", g, w)
	}
}

// TestMCPSendSigned: channel_send over HTTP writes the message in the
// token's channel, from the token's agent, signed with its key.
func TestMCPSendSigned(t *testing.T) {
	m := newMCPTestServer(t, Config{})
	secret, _ := m.agentToken(t, "claude", "dev")
	cs, err := mcpConnect(t, m.ts.URL+"/mcp", secret)
	if err != nil {
		t.Fatal(err)
	}
	var sent mcpserver.SendResult
	if e := mcpCall(t, cs, "channel_send", map[string]any{"message": "over http", "to": "codex"}, &sent); e != "" {
		t.Fatal(e)
	}
	msg, err := channel.Lookup(m.root, "dev", sent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if msg.From != "claude" || msg.To != "codex" || msg.Content.Text != "over http" {
		t.Errorf("posted %+v", msg)
	}
	if msg.Signature == nil || msg.Verify(m.cfg.Verifier, "dev") != signing.Verified {
		t.Errorf("not signed by claude's key: %+v", msg.Signature)
	}
	// Delegation is available over HTTP (TestMCPDelegateOnAMountedHost);
	// from a working directory in no repository it is refused.
	t.Chdir(t.TempDir())
	if e := mcpCall(t, cs, "delegate_to_worktree", map[string]any{"prompt": "x"}, nil); !strings.Contains(e, "not in a git repository") {
		t.Errorf("delegate_to_worktree over HTTP: %q", e)
	}
	// The reads give the verdict too.
	var res struct {
		Messages []struct{ From, Text, Verdict string }
	}
	if e := mcpCall(t, cs, "channel_peek", nil, &res); e != "" || len(res.Messages) != 1 || res.Messages[0].Verdict != "verified" {
		t.Errorf("peek: %+v %s", res, e)
	}
}

// TestMCPActsAsTheTokensAgent: no tool argument names the sender, and one
// slipped in does not change it; the channel is the token's.
func TestMCPActsAsTheTokensAgent(t *testing.T) {
	m := newMCPTestServer(t, Config{})
	secret, _ := m.agentToken(t, "claude", "dev")
	cs, err := mcpConnect(t, m.ts.URL+"/mcp?channel=dev", secret)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		schema, _ := json.Marshal(tool.InputSchema)
		var s struct{ Properties map[string]any }
		_ = json.Unmarshal(schema, &s)
		for _, p := range []string{"from", "agent", "sender", "as", "channel", "session_id"} {
			if _, ok := s.Properties[p]; ok {
				t.Errorf("tool %s takes %q", tool.Name, p)
			}
		}
	}
	// An argument the schema does not have is refused or ignored: either
	// way nothing is posted as codex.
	_ = mcpCall(t, cs, "channel_send", map[string]any{"message": "as codex?", "from": "codex", "agent": "codex"}, nil)
	if e := mcpCall(t, cs, "channel_send", map[string]any{"message": "plain"}, nil); e != "" {
		t.Fatal(e)
	}
	msgs, err := channel.Recent(m.root, "dev", "", 10)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("%v %v", msgs, err)
	}
	for _, msg := range msgs {
		if msg.From != "claude" {
			t.Errorf("posted as %s: %+v", msg.From, msg)
		}
	}
}

// TestMCPRefusals: /mcp needs an agent's token; a person's session or
// token, a revoked token, another channel, a cross-site POST are refused,
// and an agent's token reaches nothing but /mcp.
func TestMCPRefusals(t *testing.T) {
	m := newMCPTestServer(t, Config{})
	agent, rec := m.agentToken(t, "claude", "dev")
	anyCh, _ := m.agentToken(t, "claude", "")
	person, _, err := m.toks.New("bob")
	if err != nil {
		t.Fatal(err)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}`
	post := func(path, token, body string, hdr ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", m.ts.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req) // no cookie
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	if code, body := post("/mcp", agent, init); code != http.StatusOK {
		t.Fatalf("initialize with the agent's token: %d %s", code, body)
	}
	if code, body := post("/mcp?channel=ops", anyCh, init); code != http.StatusOK {
		t.Fatalf("a token without a channel, ?channel=ops: %d %s", code, body)
	}
	// The signed-in person's session id, as a bearer token.
	u, _ := http.NewRequest("GET", m.ts.URL, nil)
	session := m.client.Jar.Cookies(u.URL)[0].Value
	for _, c := range []struct {
		name, path, token string
		code              int
		hdr               []string
	}{
		{"no token", "/mcp", "", http.StatusUnauthorized, nil},
		{"an unknown token", "/mcp", "collab_0000", http.StatusUnauthorized, nil},
		{"a person's token", "/mcp?channel=dev", person, http.StatusForbidden, nil},
		{"a person's session", "/mcp", session, http.StatusForbidden, nil},
		{"another channel", "/mcp?channel=ops", agent, http.StatusForbidden, nil},
		{"no channel", "/mcp", anyCh, http.StatusBadRequest, nil},
		{"a bad channel", "/mcp?channel=..%2Fx", anyCh, http.StatusBadRequest, nil},
		{"cross-site", "/mcp", agent, http.StatusForbidden, []string{"Origin", "https://evil.example"}},
		{"too big", "/mcp", agent, http.StatusRequestEntityTooLarge, nil},
	} {
		body := init
		if c.name == "too big" {
			body = `{"x":"` + strings.Repeat("a", MaxBody) + `"}`
		}
		code, got := post(c.path, c.token, body, c.hdr...)
		if code != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, code, got, c.code)
			continue
		}
		if e := jsonError(t, got); e == "" {
			t.Errorf("%s: %s", c.name, got)
		}
	}
	// The person's cookie session, as the page would send it.
	if code, body := m.do(t, "POST", "/mcp", init, "Accept", "application/json, text/event-stream"); code != http.StatusUnauthorized {
		t.Errorf("the page's session at /mcp: %d %s", code, body)
	}
	// An agent's token reaches neither the API nor the page.
	for _, path := range []string{"/api/session", "/api/channels", "/"} {
		req, _ := http.NewRequest("GET", m.ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+agent)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("agent token at %s: %s", path, resp.Status)
		}
	}
	// Through the SDK's client: refused without a valid agent token.
	for _, tok := range []string{"", person} {
		if _, err := mcpConnect(t, m.ts.URL+"/mcp", tok); err == nil {
			t.Errorf("connected with %q", tok)
		}
	}
	if err := m.toks.Remove(rec.ID); err != nil {
		t.Fatal(err)
	}
	if code, body := post("/mcp", agent, init); code != http.StatusUnauthorized {
		t.Errorf("a revoked token: %d %s", code, body)
	}
	if _, err := mcpConnect(t, m.ts.URL+"/mcp", agent); err == nil {
		t.Error("connected with a revoked token")
	}
}

// TestMCPBounded: beyond MaxMCP requests in progress, /mcp answers 503.
// Stateless, a tools/call needs no initialize before it.
func TestMCPBounded(t *testing.T) {
	m := newMCPTestServer(t, Config{MaxMCP: 1})
	secret, _ := m.agentToken(t, "claude", "dev")
	call := func(id int, tool, args string) *http.Response {
		t.Helper()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
		req, _ := http.NewRequest("POST", m.ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// send_and_wait holds its request until codex answers.
	held := make(chan *http.Response, 1)
	go func() {
		held <- call(1, "send_and_wait", `{"message":"ping","to":"codex","timeout_seconds":600}`)
	}()
	var asked channel.Message
	for asked.ID == "" {
		if msgs, _ := channel.Recent(m.root, "dev", "", 1); len(msgs) == 1 {
			asked = msgs[0]
		} else {
			time.Sleep(5 * time.Millisecond)
		}
	}
	resp := call(2, "who", `{}`)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(jsonError(t, string(b)), "too many") {
		t.Errorf("a second request while one is in progress: %s %s", resp.Status, b)
	}
	reply := &channel.Message{SessionID: "dev", From: "codex", To: "claude", Content: channel.Content{Text: "pong"}}
	reply.SetParent(&asked)
	if err := (&channel.Writer{Root: m.root}).Post(reply); err != nil {
		t.Fatal(err)
	}
	resp = <-held
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "pong") {
		t.Errorf("send_and_wait: %s %s", resp.Status, b)
	}
	resp = call(3, "who", `{}`)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after it ended: %s %s", resp.Status, b)
	}
}

// BenchmarkMCPOverHTTP measures one tool call through the SDK's client
// over loopback HTTP to /mcp (token lookup, a stateless session, the
// work), to compare with mcpserver's in-memory BenchmarkTools.
func BenchmarkMCPOverHTTP(b *testing.B) {
	root := tree.Root(b.TempDir())
	toks := Tokens{Path: filepath.Join(b.TempDir(), "serve-tokens.json")}
	secret, _, err := toks.NewAgent("claude", "dev")
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(Config{Root: root, Person: "alice", Tokens: toks})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	tr := &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{secret}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	for _, bc := range []struct {
		name string
		args map[string]any
	}{
		{"who", nil},
		{"channel_send", map[string]any{"message": "hello"}},
		{"channel_peek", map[string]any{"limit": 10}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: bc.name, Arguments: bc.args})
				if err != nil || res.IsError {
					b.Fatalf("%s: %+v %v", bc.name, res, err)
				}
			}
		})
	}
}
