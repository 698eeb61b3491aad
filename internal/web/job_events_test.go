package web

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// ticking is a clock that moves a second each reading, so that a
// Recorder writes every event at once.
func ticking() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

// jobClock is every test job's clock: later jobs start later.
var jobClock = ticking()

// startJob records a running job of agent with the given events.
func startJob(t *testing.T, root tree.Root, agent string, texts ...string) *jobs.Recorder {
	t.Helper()
	rec, err := jobs.Start(root, jobs.Job{ID: jobs.NewID(), Agent: agent, Channel: "dev", Message: "msg-1", From: "bob", CLI: "claude"}, jobClock)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range texts {
		rec.Event(modelcli.Event{Kind: modelcli.EventProgress, Text: x})
	}
	return rec
}

// openJobStream opens a job's event stream at path.
func (ts *testServer) openJobStream(t *testing.T, path string, hdr http.Header) *bufio.Reader {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.ts.URL+path, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream %s: %s %s", path, resp.Status, b)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != ": connected\n" {
		t.Fatalf("first line %q %v", line, err)
	}
	return br
}

func TestAPIJobs(t *testing.T) {
	ts := newTestServer(t, Config{})
	done := startJob(t, ts.root, "coder", "one", "two")
	done.Finish(jobs.Completed, modelcli.Response{}, nil)
	run := startJob(t, ts.root, "coder", "<b>three</b>")
	code, body := ts.do(t, "GET", "/api/agents/coder/jobs", "")
	var list struct {
		Jobs []JobView
		More int
	}
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil {
		t.Fatalf("list: %d %s", code, body)
	}
	if len(list.Jobs) != 2 || list.Jobs[0].ID != run.Job().ID || list.Jobs[0].Status != jobs.Running ||
		list.Jobs[1].EventCount != 2 || list.Jobs[1].Status != jobs.Completed || strings.Contains(body, `"events"`) {
		t.Errorf("list: %s", body)
	}
	code, body = ts.do(t, "GET", "/api/agents/coder/jobs/"+run.Job().ID, "")
	var one JobView
	if err := json.Unmarshal([]byte(body), &one); code != 200 || err != nil {
		t.Fatalf("job: %d %s", code, body)
	}
	if one.ID != run.Job().ID || len(one.Events) != 1 || one.Events[0].Text != "<b>three</b>" || one.EventCount != 1 {
		t.Errorf("job: %s", body)
	}
	for _, path := range []string{"/api/agents/coder/jobs/job-nope", "/api/agents/coder/jobs/x.json",
		"/api/agents/coder/jobs/job-nope/events", "/api/agents/..bad/jobs"} {
		code, body := ts.do(t, "GET", path, "")
		if code != http.StatusNotFound || jsonError(t, body) == "" {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	if code, body := ts.do(t, "GET", "/api/agents/nobody/jobs", ""); code != 200 || !strings.Contains(body, `"jobs":[]`) {
		t.Errorf("no jobs: %d %s", code, body)
	}
}

// TestAPIJobEvents: a running job's stream sends the events there, then
// each new one as the record grows, then "end" with the status, and
// closes.
func TestAPIJobEvents(t *testing.T) {
	ts := newTestServer(t, Config{Poll: 20 * time.Millisecond})
	rec := startJob(t, ts.root, "coder", "first")
	br := ts.openJobStream(t, "/api/agents/coder/jobs/"+rec.Job().ID+"/events", nil)
	want := func(wantEv, wantID, text string) {
		t.Helper()
		ev, id, data := nextEvent(t, br)
		var e modelcli.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil || ev != wantEv || id != wantID || e.Text != text {
			t.Fatalf("event %q %q %s (%v), want %q %q %q", ev, id, data, err, wantEv, wantID, text)
		}
	}
	want("event", "0", "first")
	rec.Event(modelcli.Event{Kind: modelcli.EventToolCall, Tool: "Read", Text: "second"})
	want("event", "1", "second")
	rec.Finish(jobs.Completed, modelcli.Response{}, nil)
	if ev, _, data := nextEvent(t, br); ev != "end" || data != `{"status":"completed"}` {
		t.Errorf("end: %q %s", ev, data)
	}
	if rest, err := io.ReadAll(br); err != nil || strings.Contains(string(rest), "event:") {
		t.Errorf("after the end: %q %v", rest, err)
	}

	// A reconnect after event 0 gets what came after it, then the end at
	// once (the job has ended).
	br = ts.openJobStream(t, "/api/agents/coder/jobs/"+rec.Job().ID+"/events", http.Header{"Last-Event-Id": {"0"}})
	want("event", "1", "second")
	if ev, _, _ := nextEvent(t, br); ev != "end" {
		t.Errorf("reconnect: %q, want end", ev)
	}
}

// TestPageJobEvents: the agent's page shows each job's events, escaped,
// with a live stream for the running job only; that stream sends new
// events rendered, past the ones the page shows.
func TestPageJobEvents(t *testing.T) {
	ts := newTestServer(t, Config{Poll: 20 * time.Millisecond})
	done := startJob(t, ts.root, "coder", "old work")
	done.Finish(jobs.Failed, modelcli.Response{}, nil)
	run := startJob(t, ts.root, "coder", "<script>alert(1)</script>")
	code, body := ts.do(t, "GET", "/agents/coder", "")
	if code != 200 {
		t.Fatalf("page: %d", code)
	}
	if strings.Count(body, "sse-connect=") != 1 || !strings.Contains(body, `sse-connect="/agents/coder/jobs/`+run.Job().ID+`/events?from=1"`) {
		t.Errorf("want one stream, the running job's, from 1:\n%s", body)
	}
	if !strings.Contains(body, "old work") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") || strings.Contains(body, "<script>alert") {
		t.Errorf("events not shown, or not escaped:\n%s", body)
	}
	br := ts.openJobStream(t, "/agents/coder/jobs/"+run.Job().ID+"/events?from=1", nil)
	run.Event(modelcli.Event{Kind: modelcli.EventProgress, Text: "a <i>new</i> step"})
	if ev, id, data := nextEvent(t, br); ev != "event" || id != "1" || !strings.Contains(data, `<li class="event" data-kind="progress" data-index="1">`) ||
		!strings.Contains(data, "a &lt;i&gt;new&lt;/i&gt; step") {
		t.Errorf("page event %q %q %s", ev, id, data)
	}
	run.Finish(jobs.Killed, modelcli.Response{}, nil)
	if ev, _, data := nextEvent(t, br); ev != "end" || data != "killed" {
		t.Errorf("end: %q %q", ev, data)
	}
}

// TestPageJobEventsBounded: the page shows a job's newest pageEvents
// events and says how many it leaves out.
func TestPageJobEventsBounded(t *testing.T) {
	ts := newTestServer(t, Config{})
	texts := make([]string, pageEvents+5)
	for i := range texts {
		texts[i] = "step " + string(rune('a'+i%26))
	}
	startJob(t, ts.root, "coder", texts...)
	_, body := ts.do(t, "GET", "/agents/coder", "")
	if n := strings.Count(body, `<li class="event"`); n != pageEvents || !strings.Contains(body, "5 earlier events are not shown") ||
		!strings.Contains(body, `events?from=105"`) {
		t.Errorf("%d events shown:\n%s", n, body)
	}
}
