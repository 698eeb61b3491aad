package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
)

// dispatched is one event as a client dispatches it.
type dispatched struct{ event, id, data string }

// sseParser is the event stream parser of the HTML standard ("Server-sent
// events", interpreting an event stream), as a browser runs it: lines end
// at CRLF, LF or CR; a blank line dispatches; "id" sets the last event id
// (which later events keep), "retry" the reconnection time. It records
// every retry field it accepts, so a test sees one that text smuggled in.
type sseParser struct {
	line  []byte
	cr    bool // the last byte was a CR: an LF now ends nothing
	data  strings.Builder
	event string
	last  string // the last event id buffer
	retry []string
	out   []dispatched
}

// feed parses b, a part of the stream, and returns the events it
// dispatched.
func (p *sseParser) feed(b []byte) []dispatched {
	p.out = p.out[:0]
	for _, c := range b {
		if p.cr {
			p.cr = false
			if c == '\n' {
				continue
			}
		}
		switch c {
		case '\r':
			p.cr = true
			p.field()
		case '\n':
			p.field()
		default:
			p.line = append(p.line, c)
		}
	}
	return p.out
}

func (p *sseParser) field() {
	var l strings.Builder
	for _, r := range string(p.line) { // UTF-8 decode: invalid bytes are U+FFFD
		l.WriteRune(r)
	}
	p.line = p.line[:0]
	line := l.String()
	if line == "" {
		p.dispatch()
		return
	}
	if line[0] == ':' {
		return
	}
	name, value, _ := strings.Cut(line, ":")
	value = strings.TrimPrefix(value, " ")
	switch name {
	case "event":
		p.event = value
	case "data":
		p.data.WriteString(value + "\n")
	case "id":
		if !strings.Contains(value, "\x00") {
			p.last = value
		}
	case "retry":
		if value != "" && strings.Trim(value, "0123456789") == "" {
			p.retry = append(p.retry, value)
		}
	}
}

func (p *sseParser) dispatch() {
	data := p.data.String()
	event := p.event
	p.data.Reset()
	p.event = ""
	if data == "" {
		return
	}
	if event == "" {
		event = "message"
	}
	p.out = append(p.out, dispatched{event: event, id: p.last, data: strings.TrimSuffix(data, "\n")})
}

// sseClient reads a live stream through the strict parser.
type sseClient struct {
	events chan dispatched
	mu     sync.Mutex
	p      sseParser
}

// retries returns the retry fields the stream held so far.
func (c *sseClient) retries() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.p.retry...)
}

// openSSE opens the event stream at path with the signed-in client and
// header, and parses it as a browser would until the test ends.
func (ts *testServer) openSSE(t *testing.T, path string, hdr http.Header) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.ts.URL+path, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream %s: %s %s", path, resp.Status, b)
	}
	c := &sseClient{events: make(chan dispatched, 100)}
	go func() {
		defer close(c.events)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			c.mu.Lock()
			evs := append([]dispatched(nil), c.p.feed(buf[:n])...)
			c.mu.Unlock()
			for _, e := range evs {
				c.events <- e
			}
			if err != nil {
				return
			}
		}
	}()
	return c
}

// until returns the events up to and including the first that done
// accepts; it fails the test when the stream ends or stays silent for
// long.
func (c *sseClient) until(t *testing.T, done func(dispatched) bool) []dispatched {
	t.Helper()
	var got []dispatched
	timeout := time.After(15 * time.Second)
	for {
		select {
		case e, ok := <-c.events:
			if !ok {
				t.Fatalf("the stream ended after %q", got)
			}
			got = append(got, e)
			if done(e) {
				return got
			}
		case <-timeout:
			t.Fatalf("no end event after %q", got)
		}
	}
}

// poison is text that, written raw into a stream, ends lines with bare
// CRs: it would set an id from the year 2999, a retry of eleven days,
// and dispatch an event of its own.
const poison = "first line\rid: msg-29990101-000000-mallory-beef\rretry: 999999999\r\r" +
	"event: message\rdata: forged\r\rcrlf\r\nlf\nend"

// TestStreamsFrameUntrustedText: a message and a job event whose text
// holds bare CRs, CRLFs and LFs arrive on every stream, the API's and the
// page's, as exactly one event each, with its own id and no retry field;
// the event after them comes next with its own id.
func TestStreamsFrameUntrustedText(t *testing.T) {
	ts := newTestServer(t, Config{Poll: 20 * time.Millisecond})
	rec := startJob(t, ts.root, "coder")
	job := rec.Job().ID
	type stream struct {
		name, path string
		// post writes the poisoned item then a marker, and returns their
		// ids.
		post func(t *testing.T) (ids [2]string)
		json bool
	}
	var n int
	// The marker a second after the poison, in a channel of its own per
	// stream: ids within one second sort by sender and suffix, which
	// would put bob's marker first.
	chanPost := func(ch string) func(t *testing.T) [2]string {
		return func(t *testing.T) [2]string {
			at := time.Now()
			a := postAt(t, ts.root, ch, "mallory", "all", poison, at)
			b := postAt(t, ts.root, ch, "bob", "all", "marker", at.Add(time.Second))
			return [2]string{a.Key(), b.Key()}
		}
	}
	jobPost := func(t *testing.T) [2]string {
		rec.Event(modelcli.Event{Kind: modelcli.EventProgress, Text: poison})
		rec.Event(modelcli.Event{Kind: modelcli.EventProgress, Text: "marker"})
		n += 2
		return [2]string{fmt.Sprint(n - 2), fmt.Sprint(n - 1)}
	}
	for _, tc := range []stream{
		{"api channel", "/api/channels/dev/events", chanPost("dev"), true},
		{"page channel", "/c/ops/events", chanPost("ops"), false},
		{"api job", "/api/agents/coder/jobs/" + job + "/events?from=", jobPost, true},
		{"page job", "/agents/coder/jobs/" + job + "/events?from=", jobPost, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if strings.HasSuffix(path, "=") {
				path += fmt.Sprint(n) // past the events the earlier cases posted
			}
			c := ts.openSSE(t, path, nil)
			ids := tc.post(t)
			got := c.until(t, func(e dispatched) bool { return strings.Contains(e.data, "marker") })
			if len(got) != 2 || got[0].id != ids[0] || got[1].id != ids[1] {
				t.Fatalf("events %q, want two with ids %q", got, ids)
			}
			if r := c.retries(); len(r) > 0 {
				t.Errorf("retry fields %q", r)
			}
			first := got[0]
			if tc.json {
				var v struct{ Text string }
				if err := json.Unmarshal([]byte(first.data), &v); err != nil || v.Text != poison {
					t.Errorf("data %q (%v): text %q, want %q", first.data, err, v.Text, poison)
				}
				return
			}
			// The page's HTML: every line break arrives as an LF.
			want := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(poison)
			if !strings.Contains(first.data, want) {
				t.Errorf("data %q does not hold %q", first.data, want)
			}
		})
	}
}

// TestStreamsIgnoreUnrealLastEventID: a Last-Event-ID that names no
// position the server gave (garbage, a message not in the channel, one
// named in the year 2999, a job event past the record's end) is ignored:
// the stream starts as a new one does, and what comes next arrives. A
// page that showed a message named in the future still gets what comes.
func TestStreamsIgnoreUnrealLastEventID(t *testing.T) {
	ts := newTestServer(t, Config{Poll: 20 * time.Millisecond})
	future := "msg-29990101-000000-mallory-beef"
	planted := fmt.Sprintf(`{"id":%q,"session_id":"dev","from":"mallory","timestamp":"2999-01-01T00:00:00Z","content":{"text":"from the future"}}`, future)
	if err := os.MkdirAll(ts.root.Channel("dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ts.root.Channel("dev")+"/"+future+".json", []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := startJob(t, ts.root, "coder", "zero")
	job := rec.Job().ID
	channelNext := func(t *testing.T) string {
		return post(t, ts.root, "dev", "bob", "all", "next").Key()
	}
	for _, tc := range []struct {
		name, path, last string
		next             func(t *testing.T) string // posts what must arrive; its id
	}{
		{"page channel, a planted future message", "/c/dev/events", future, channelNext},
		{"page channel, no such message", "/c/dev/events", "msg-29981231-235959-mallory-dead", channelNext},
		{"page channel, garbage", "/c/dev/events", "garbage", channelNext},
		{"page channel, shown a planted future message", "/c/dev/events?seen=" + future, "", channelNext},
		{"api channel, a planted future message", "/api/channels/dev/events", future, channelNext},
		{"api job, past the end", "/api/agents/coder/jobs/" + job + "/events", "999999", func(*testing.T) string { return "0" }},
		{"page job, past the end", "/agents/coder/jobs/" + job + "/events", "5", func(*testing.T) string { return "0" }},
		{"api job, negative", "/api/agents/coder/jobs/" + job + "/events", "-3", func(*testing.T) string { return "0" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ts.openSSE(t, tc.path, http.Header{"Last-Event-Id": {tc.last}})
			want := tc.next(t)
			got := c.until(t, func(e dispatched) bool { return e.id == want })
			for _, e := range got {
				if e.id == future {
					t.Errorf("events %q: the planted message again", got)
				}
			}
		})
	}
}

// TestStreamsResumeAtARealPosition: a Last-Event-ID the server gave is
// honoured: a job's stream goes on after it, a channel's after it.
func TestStreamsResumeAtARealPosition(t *testing.T) {
	ts := newTestServer(t, Config{Poll: 20 * time.Millisecond})
	rec := startJob(t, ts.root, "coder", "zero", "one", "two")
	c := ts.openSSE(t, "/api/agents/coder/jobs/"+rec.Job().ID+"/events", http.Header{"Last-Event-Id": {"1"}})
	if got := c.until(t, func(dispatched) bool { return true }); got[0].id != "2" {
		t.Errorf("job resumed at %q, want event 2", got)
	}
	at := time.Now().Add(-time.Minute)
	seen := postAt(t, ts.root, "dev", "bob", "all", "seen", at)
	missed := postAt(t, ts.root, "dev", "bob", "all", "missed", at.Add(time.Second))
	c = ts.openSSE(t, "/c/dev/events", http.Header{"Last-Event-Id": {seen.Key()}})
	if got := c.until(t, func(dispatched) bool { return true }); got[0].id != missed.Key() {
		t.Errorf("channel resumed at %q, want %s", got, missed.Key())
	}
}

// FuzzSSE: any data, framed by writeEvent, reads back through the strict
// parser as one event with its type, its id and the same data (its line
// breaks LFs, invalid UTF-8 as U+FFFD); an id or type that would break
// its line is refused.
func FuzzSSE(f *testing.F) {
	for _, s := range []string{"", "x", poison, "a\r\nb", "\r", "\n", "\r\n", "a\r", "\n\n\r\r", ": not a comment", "data: x", "\xff\xfe", "é\r\n"} {
		f.Add("message", "msg-1", s)
	}
	f.Add("event", "1\r", "x")
	f.Add("end\n", "", "x")
	f.Fuzz(func(t *testing.T, event, id, data string) {
		b, err := appendEvent(nil, event, id, []byte(data))
		if !fieldSafe(event) || !fieldSafe(id) {
			if err == nil || len(b) != 0 {
				t.Fatalf("event %q id %q: framed %q (%v)", event, id, b, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var p sseParser
		got := append([]dispatched(nil), p.feed(b)...)
		wantEvent := strings.ToValidUTF8(event, "\uFFFD")
		if wantEvent == "" {
			wantEvent = "message"
		}
		want := dispatched{event: wantEvent, id: strings.ToValidUTF8(id, "\uFFFD"),
			data: strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(strings.ToValidUTF8(data, "\uFFFD"))}
		if len(got) != 1 || got[0] != want || len(p.retry) > 0 {
			t.Fatalf("framed %q: got %q (retry %q), want %q", b, got, p.retry, want)
		}
	})
}

// TestWriteComment: a comment stays one line.
func TestWriteComment(t *testing.T) {
	var b strings.Builder
	if err := writeComment(&b, "keep\r\nretry: 1\ralive"); err != nil || b.String() != ": keepretry: 1alive\n\n" {
		t.Errorf("%q %v", b.String(), err)
	}
	var p sseParser
	if evs := p.feed([]byte(b.String())); len(evs) > 0 || len(p.retry) > 0 {
		t.Errorf("a comment made %q, retry %q", evs, p.retry)
	}
}
