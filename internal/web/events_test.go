package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// openStream opens channel ch's event stream and returns its response
// once the server said it is connected.
func (ts *testServer) openStream(t *testing.T, ch string) (*http.Response, *bufio.Reader) {
	t.Helper()
	resp, err := ts.client.Get(ts.ts.URL + "/api/channels/" + ch + "/events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %s %s", resp.Status, b)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != ": connected\n" {
		t.Fatalf("first line %q %v", line, err)
	}
	return resp, br
}

// nextEvent reads the next event's data, skipping comments.
func nextEvent(t *testing.T, br *bufio.Reader) (event, id, data string) {
	t.Helper()
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && data != "":
			return event, id, data
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

func TestEventsStream(t *testing.T) {
	ts := newTestServer(t, Config{Poll: 20 * time.Millisecond})
	old := post(t, ts.root, "dev", "bob", "all", "before the stream")
	_, br := ts.openStream(t, "dev")
	m := post(t, ts.root, "dev", "bob", "all", "<b>new</b>\nline two")
	ev, id, data := nextEvent(t, br)
	var v MessageView
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		t.Fatal(err)
	}
	if ev != "message" || id != m.ID || v.ID != m.ID || v.Text != "<b>new</b>\nline two" || v.Verdict != "unsigned" || v.ID == old.ID {
		t.Errorf("event %q %q %+v", ev, id, v)
	}
	if strings.Contains(data, "<b>") {
		t.Errorf("event data carries raw HTML: %s", data)
	}
	// A message posted through the API comes too.
	code, body := ts.do(t, "POST", "/api/channels/dev/messages", `{"text":"from the page"}`)
	if code != 201 {
		t.Fatalf("post: %d %s", code, body)
	}
	if _, _, data := nextEvent(t, br); !strings.Contains(data, `"from the page"`) {
		t.Errorf("second event %s", data)
	}
}

func TestEventsChannelAppearsLater(t *testing.T) {
	ts := newTestServer(t, Config{Poll: 20 * time.Millisecond})
	_, br := ts.openStream(t, "later")
	m := post(t, ts.root, "later", "bob", "all", "first")
	if _, id, _ := nextEvent(t, br); id != m.ID {
		t.Errorf("event id %q, want %q", id, m.ID)
	}
}

func TestEventsBounded(t *testing.T) {
	ts := newTestServer(t, Config{MaxStreams: 1})
	resp, _ := ts.openStream(t, "dev")
	second, err := ts.client.Get(ts.ts.URL + "/api/channels/dev/events")
	if err != nil {
		t.Fatal(err)
	}
	if second.StatusCode != http.StatusServiceUnavailable {
		second.Body.Close()
		t.Fatalf("second stream: %s", second.Status)
	}
	body, _ := io.ReadAll(second.Body)
	second.Body.Close()
	if !strings.Contains(jsonError(t, string(body)), "too many live streams") {
		t.Errorf("second stream: %s", body)
	}
	resp.Body.Close()
	// The slot comes back once the server sees the stream gone: on its
	// next write, or at once when the request's context ends.
	for i := 0; ; i++ {
		resp, err := ts.client.Get(ts.ts.URL + "/api/channels/dev/events")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		if i > 500 {
			t.Fatalf("the slot never came back: %s", resp.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEventsEndOnClose(t *testing.T) {
	ts := newTestServer(t, Config{})
	if err := os.MkdirAll(ts.root.Channel("dev"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, br := ts.openStream(t, "dev")
	ts.Close()
	if _, err := io.ReadAll(br); err != nil {
		t.Errorf("stream did not end cleanly: %v", err)
	}
}

// TestServeShutdownEndsStreams: Serve's shutdown ends open streams
// instead of waiting out its grace.
func TestServeShutdownEndsStreams(t *testing.T) {
	s, err := New(Config{Root: tree.Root(t.TempDir()), Person: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, "", "", time.Minute) }()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	base := "http://" + ln.Addr().String()
	if resp, err := c.Get(base + s.SignInPath()); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	resp, err := c.Get(base + "/api/channels/dev/events")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Errorf("stream did not end cleanly: %v", err)
	}
}

// TestEventsResume: a client reconnecting with Last-Event-ID first gets
// the messages after it, once each.
func TestEventsResume(t *testing.T) {
	ts := newTestServer(t, Config{Poll: 20 * time.Millisecond})
	seen := post(t, ts.root, "dev", "bob", "all", "seen")
	missed1 := post(t, ts.root, "dev", "bob", "all", "missed one")
	missed2 := post(t, ts.root, "dev", "bob", "all", "missed two")
	req, err := http.NewRequest("GET", ts.ts.URL+"/api/channels/dev/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Last-Event-ID", seen.ID)
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	got := map[string]bool{}
	for range 2 {
		_, id, _ := nextEvent(t, br)
		got[id] = true
	}
	if !got[missed1.ID] || !got[missed2.ID] {
		t.Errorf("resumed with %v, want %s and %s", got, missed1.ID, missed2.ID)
	}
	next := post(t, ts.root, "dev", "bob", "all", "live")
	if _, id, _ := nextEvent(t, br); id != next.ID {
		t.Errorf("after the backlog: %s, want %s", id, next.ID)
	}
}

// TestStreamRefusal: past MaxStreams every stream, the API's and the
// page's, is refused by one path: 503, Retry-After and the same message,
// in JSON under /api/ and in plain text for the page.
func TestStreamRefusal(t *testing.T) {
	ts := newTestServer(t, Config{MaxStreams: 1, MaxStreamsPerPerson: 2})
	rec := startJob(t, ts.root, "coder", "x")
	ts.openStream(t, "dev")
	for _, tc := range []struct {
		path, ctype string
	}{
		{"/api/channels/dev/events", "application/json"},
		{"/api/agents/coder/jobs/" + rec.Job().ID + "/events", "application/json"},
		{"/c/dev/events", "text/plain; charset=utf-8"},
		{"/agents/coder/jobs/" + rec.Job().ID + "/events", "text/plain; charset=utf-8"},
	} {
		resp, err := ts.client.Get(ts.ts.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		msg := strings.TrimSpace(string(b))
		if tc.ctype == "application/json" {
			msg = jsonError(t, msg)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Content-Type") != tc.ctype ||
			resp.Header.Get("Retry-After") != "30" ||
			msg != "too many live streams: the server limit (1, --max-streams) is reached; try again later" {
			t.Errorf("%s: %s %q Retry-After %q: %q", tc.path, resp.Status, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"), msg)
		}
	}
}
