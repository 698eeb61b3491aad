package web

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
)

// TestSlots: a holder at its cap is refused by that cap, whatever the
// total; a full server refuses every holder by the total; a slot given
// back (once, however often release is called) can be taken again.
func TestSlots(t *testing.T) {
	l := newSlots(3, 2)
	var held []func()
	for _, tc := range []struct {
		holder string
		want   capHit
	}{
		{"ann", capNone},
		{"ann", capNone},
		{"ann", capEach},
		{"bob", capNone},
		{"bob", capTotal},
		{"cy", capTotal},
		{"ann", capEach},
	} {
		release, hit := l.take(tc.holder)
		if hit != tc.want {
			t.Fatalf("take(%s) after %d: %v, want %v", tc.holder, len(held), hit, tc.want)
		}
		if release != nil {
			held = append(held, release)
		}
	}
	held[0]()
	held[0]() // a second release gives nothing more back
	if _, hit := l.take("cy"); hit != capNone {
		t.Fatalf("after a release: %v", hit)
	}
	if _, hit := l.take("bob"); hit != capTotal {
		t.Fatalf("a released slot given back twice: %v", hit)
	}
	if got := perHolder(0, 32); got != 8 {
		t.Errorf("default per holder of 32: %d", got)
	}
	if got := perHolder(0, 2); got != 1 {
		t.Errorf("default per holder of 2: %d", got)
	}
}

// TestStreamsPerPerson: a person holding MaxStreamsPerPerson streams gets
// 503 naming the per-person cap, while another person still opens one;
// once the server's MaxStreams are all open, 503 names that cap.
func TestStreamsPerPerson(t *testing.T) {
	toks := Tokens{Path: filepath.Join(t.TempDir(), "serve-tokens.json")}
	ts := newTestServer(t, Config{Tokens: toks, MaxStreams: 3, MaxStreamsPerPerson: 2})
	bob, _, err := toks.New("bob")
	if err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T, as, path string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.ts.URL+path, nil)
		c := ts.client // alice's session
		if as == "bob" {
			c = http.DefaultClient
			req.Header.Set("Authorization", "Bearer "+bob)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, strings.TrimSpace(string(b))
		}
		// Held open until the test ends: the server has its slot once it
		// sent its first line.
		if _, err := resp.Body.Read(make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, ""
	}
	for _, tc := range []struct {
		as, path string
		code     int
		msg      string
	}{
		{"alice", "/api/channels/dev/events", 200, ""},
		{"alice", "/c/dev/events", 200, ""},
		{"alice", "/api/channels/dev/events", 503, `{"error":"too many live streams: the per-person limit (2, --max-streams-per-person) is reached; close another tab or try again later"}`},
		{"alice", "/c/dev/events", 503, "too many live streams: the per-person limit (2, --max-streams-per-person) is reached; close another tab or try again later"},
		{"bob", "/api/channels/dev/events", 200, ""},
		{"bob", "/api/channels/dev/events", 503, `{"error":"too many live streams: the server limit (3, --max-streams) is reached; try again later"}`},
	} {
		code, msg := open(t, tc.as, tc.path)
		if code != tc.code || msg != tc.msg {
			t.Errorf("%s %s: %d %s, want %d %s", tc.as, tc.path, code, msg, tc.code, tc.msg)
		}
	}
}

// TestMCPPerToken: one token holding MaxMCPPerToken send_and_wait calls
// gets 503 naming the per-token cap while another token still gets
// through; with MaxMCP calls in progress, 503 names the server's cap.
func TestMCPPerToken(t *testing.T) {
	m := newMCPTestServer(t, Config{MaxMCP: 2, MaxMCPPerToken: 1})
	first, _ := m.agentToken(t, "claude", "dev")
	second, _ := m.agentToken(t, "claude", "dev")
	third, _ := m.agentToken(t, "gemini", "dev")
	call := func(token string, id int, tool, args string) (int, string) {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
		req, _ := http.NewRequest("POST", m.ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	// hold starts a send_and_wait with token that waits for codex's
	// answer, and returns the message it posted and its answer to come.
	type answer struct {
		code int
		body string
	}
	hold := func(token, text string) (channel.Message, <-chan answer) {
		t.Helper()
		done := make(chan answer, 1)
		go func() {
			code, body := call(token, 1, "send_and_wait", fmt.Sprintf(`{"message":%q,"to":"codex","timeout_seconds":600}`, text))
			done <- answer{code, body}
		}()
		for {
			msgs, _ := channel.Recent(m.root, "dev", "", 10)
			for _, msg := range msgs {
				if msg.Content.Text == text {
					return msg, done
				}
			}
			select {
			case a := <-done:
				t.Fatalf("send_and_wait %q ended: %d %s", text, a.code, a.body)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	asked1, done1 := hold(first, "one")
	code, body := call(first, 2, "who", `{}`)
	if code != http.StatusServiceUnavailable || jsonError(t, body) != "too many MCP requests: the per-token limit (1, --max-mcp-per-token) is reached; try again when one of this token's calls ends" {
		t.Errorf("the holding token again: %d %s", code, body)
	}
	if code, body := call(second, 3, "who", `{}`); code != http.StatusOK {
		t.Errorf("another token: %d %s", code, body)
	}
	asked2, done2 := hold(second, "two")
	code, body = call(third, 4, "who", `{}`)
	if code != http.StatusServiceUnavailable || jsonError(t, body) != "too many MCP requests: the server limit (2, --max-mcp) is reached; try again later" {
		t.Errorf("a third token with the server full: %d %s", code, body)
	}
	for _, q := range []struct {
		asked channel.Message
		done  <-chan answer
	}{{asked1, done1}, {asked2, done2}} {
		reply := &channel.Message{SessionID: "dev", From: "codex", To: q.asked.From, Content: channel.Content{Text: "pong"}}
		reply.SetParent(&q.asked)
		if err := (&channel.Writer{Root: m.root}).Post(reply); err != nil {
			t.Fatal(err)
		}
		if a := <-q.done; a.code != http.StatusOK || !strings.Contains(a.body, "pong") {
			t.Errorf("send_and_wait %q: %d %s", q.asked.Content.Text, a.code, a.body)
		}
	}
	if code, body := call(first, 5, "who", `{}`); code != http.StatusOK {
		t.Errorf("after its call ended: %d %s", code, body)
	}
}
