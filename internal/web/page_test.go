package web_test

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/web"
	"github.com/collabdev/collab/presence"
)

// signedIn serves root and returns a client with a session and the URL.
func signedIn(t *testing.T, cfg web.Config) (*http.Client, string) {
	t.Helper()
	if cfg.Person == "" {
		cfg.Person = "ann"
	}
	cfg.Poll = 50 * time.Millisecond
	srv, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	resp, err := c.Get(ts.URL + srv.SignInPath())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return c, ts.URL
}

func postMessage(t *testing.T, root tree.Root, ch, from, text string) channel.Message {
	t.Helper()
	m := channel.Message{SessionID: ch, From: from, Content: channel.Content{Text: text}}
	if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// events opens a channel's page event stream and returns its lines.
func events(t *testing.T, c *http.Client, u string, header http.Header) (*http.Response, <-chan string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return resp, lines
}

// nextData returns the data of the next event.
func nextData(t *testing.T, lines <-chan string) (id, data string) {
	t.Helper()
	var b strings.Builder
	for l := range lines {
		switch {
		case l == "" && b.Len() > 0:
			return id, b.String()
		case strings.HasPrefix(l, "id: "):
			id = strings.TrimPrefix(l, "id: ")
		case strings.HasPrefix(l, "data: "):
			b.WriteString(strings.TrimPrefix(l, "data: ") + "\n")
		}
	}
	t.Fatal("the event stream ended")
	return "", ""
}

// TestPageEscapes checks the page and the event stream both escape a
// message's text and sender.
func TestPageEscapes(t *testing.T) {
	root := tree.Root(t.TempDir())
	probe := `<script>alert(1)</script><img src=x onerror=alert(2)>`
	postMessage(t, root, "probe", "mallory", probe)
	c, base := signedIn(t, web.Config{Root: root})
	resp, err := c.Get(base + "/c/probe")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(body)
	if resp.StatusCode != 200 || !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;") {
		t.Fatalf("page (%d) does not show the probe escaped:\n%s", resp.StatusCode, page)
	}
	if strings.Contains(page, "<img") || strings.Count(page, "<script") != 3 { // htmx, its SSE extension, page.js
		t.Errorf("page holds markup from the message:\n%s", page)
	}
	_, lines := events(t, c, base+"/c/probe/events", nil)
	postMessage(t, root, "probe", "mallory", "live "+probe)
	_, data := nextData(t, lines)
	if !strings.Contains(data, "live &lt;script&gt;") || strings.Contains(data, "<script") || strings.Contains(data, "<img") {
		t.Errorf("event data does not escape the probe:\n%s", data)
	}
}

// TestPageEventsResume checks a stream starts after the names the page
// showed ("seen") or the last event id, and sends each message once.
func TestPageEventsResume(t *testing.T) {
	root := tree.Root(t.TempDir())
	first := postMessage(t, root, "c", "bob", "one")
	second := postMessage(t, root, "c", "bob", "two")
	c, base := signedIn(t, web.Config{Root: root})

	_, lines := events(t, c, base+"/c/c/events?seen="+url.QueryEscape(first.ID), nil)
	id, data := nextData(t, lines)
	if id != second.ID || !strings.Contains(data, "two") {
		t.Errorf("after seen=first: event %s %q, want the second message", id, data)
	}

	// A stream sends in channel order, which within a second need not be
	// the order of posting: resume after the last of the two in it.
	both, _, _, err := channel.Newest(root, "c", 2, nil, nil)
	if err != nil || len(both) != 2 {
		t.Fatalf("channel: %d messages (%v)", len(both), err)
	}
	_, lines = events(t, c, base+"/c/c/events", http.Header{"Last-Event-Id": {both[1].Key()}})
	third := postMessage(t, root, "c", "bob", "three")
	id, data = nextData(t, lines)
	if id != third.ID || !strings.Contains(data, "three") {
		t.Errorf("after Last-Event-ID=%s: event %s %q, want the third message", both[1].Key(), id, data)
	}
}

// TestPageEventsBounded checks that a stream past MaxStreams is refused
// with 503.
func TestPageEventsBounded(t *testing.T) {
	root := tree.Root(t.TempDir())
	c, base := signedIn(t, web.Config{Root: root, MaxStreams: 1})
	resp, _ := events(t, c, base+"/c/c/events", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("first stream: %s", resp.Status)
	}
	resp2, err := c.Get(base + "/c/c/events")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("second stream: %s, want 503", resp2.Status)
	}
}

// TestPagePost checks the post box: a post lands in the channel as the
// signed-in person; empty text and a bad channel name are refused.
func TestPagePost(t *testing.T) {
	root := tree.Root(t.TempDir())
	c, base := signedIn(t, web.Config{Root: root})
	for _, tc := range []struct {
		name, path, text string
		code             int
	}{
		{"posts", "/c/dev/post", "hello", 200},
		{"empty", "/c/dev/post", "  ", http.StatusBadRequest},
		{"bad channel", "/c/..%2Fkeys/post", "x", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := c.PostForm(base+tc.path, url.Values{"text": {tc.text}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.code)
			}
		})
	}
	msgs, _, _, err := channel.Newest(root, "dev", 10, nil, nil)
	if err != nil || len(msgs) != 1 || msgs[0].From != "ann" || msgs[0].Content.Text != "hello" {
		t.Errorf("channel dev: %+v (%v), want one message from ann", msgs, err)
	}
}

// TestPageOlder checks the transcript scrolls back by pages: the channel
// page shows the newest PageMessages and a button for the page before,
// and each older page brings the next button until the first message.
func TestPageOlder(t *testing.T) {
	root := tree.Root(t.TempDir())
	start := time.Now().Add(-time.Hour)
	total := 2*web.PageMessages + 7
	for i := range total {
		w := channel.Writer{Root: root, Now: func() time.Time { return start.Add(time.Duration(i) * time.Second) }}
		if err := w.Post(&channel.Message{SessionID: "big", From: "bot", Content: channel.Content{Text: fmt.Sprintf("number %03d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	c, base := signedIn(t, web.Config{Root: root})
	get := func(path string) string {
		t.Helper()
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	older := regexp.MustCompile(`hx-get="(/c/big/older\?before=[^"]+)"`)
	body := get("/c/big")
	var seen []string
	for range 3 {
		seen = append(seen, regexp.MustCompile(`number \d{3}`).FindAllString(body, -1)...)
		m := older.FindStringSubmatch(body)
		if m == nil {
			break
		}
		body = get(strings.ReplaceAll(m[1], "&amp;", "&"))
	}
	if len(seen) != total {
		t.Fatalf("%d messages over the pages, want %d", len(seen), total)
	}
	slices.Sort(seen)
	if seen = slices.Compact(seen); seen[0] != "number 000" || len(seen) != total {
		t.Errorf("pages repeat or miss messages: %v", seen)
	}
}

// TestPageReply checks the reply box: it names the message answered and
// the post carries in_reply_to.
func TestPageReply(t *testing.T) {
	root := tree.Root(t.TempDir())
	q := postMessage(t, root, "dev", "bob", "shall we ship?\nsecond line")
	c, base := signedIn(t, web.Config{Root: root})
	resp, err := c.Get(base + "/c/dev/reply?to=" + q.ID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `name="reply_to" value="`+q.ID+`"`) || !strings.Contains(string(b), "shall we ship?") || strings.Contains(string(b), "second line") {
		t.Errorf("reply box:\n%s", b)
	}
	resp, err = c.PostForm(base+"/c/dev/post", url.Values{"text": {"yes"}, "reply_to": {q.ID}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	msgs, _, _, err := channel.Newest(root, "dev", 10, nil, func(m *channel.Message) bool { return m.From == "ann" })
	if err != nil || len(msgs) != 1 || msgs[0].Metadata.InReplyTo != q.ID {
		t.Errorf("reply: %+v (%v), want one from ann in reply to %s", msgs, err, q.ID)
	}
	for _, bad := range []string{"/c/dev/reply?to=nope", "/c/dev/reply?to=msg-20200101-000000-x-abcd"} {
		resp, err := c.Get(base + bad)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("GET %s: 200, want a refusal", bad)
		}
	}
}

// TestPageBody checks code fences show as code blocks (escaped) and a long
// message shows folded.
func TestPageBody(t *testing.T) {
	root := tree.Root(t.TempDir())
	postMessage(t, root, "dev", "bob", "try:\n```html\n<script>alert(1)</script>\n```\nthen reload")
	postMessage(t, root, "dev", "bob", "a long log\n"+strings.Repeat("line\n", 40))
	c, base := signedIn(t, web.Config{Root: root})
	resp, err := c.Get(base + "/c/dev")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	for _, want := range []string{
		`<pre class="text">try:</pre>`,
		`<pre class="code" data-lang="html"><code>&lt;script&gt;alert(1)&lt;/script&gt;</code></pre>`,
		`<pre class="text">then reload</pre>`,
		`<details class="fold"><summary>a long log <span class="lines">(42 lines)</span></summary>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}

// TestPageTo checks the post box offers the who board's agents, posts to
// the one chosen, and answers a reply to an agent's message to that agent.
func TestPageTo(t *testing.T) {
	root := tree.Root(t.TempDir())
	if err := presence.Write(root, presence.Status{AgentID: "reviewer", State: presence.StateAwake, Channel: "dev"}); err != nil {
		t.Fatal(err)
	}
	q := postMessage(t, root, "dev", "reviewer", "ready for review?")
	c, base := signedIn(t, web.Config{Root: root})
	get := func(path string) string {
		t.Helper()
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if page := get("/c/dev"); !strings.Contains(page, `<option value="reviewer">reviewer</option>`) {
		t.Errorf("the post box does not offer reviewer:\n%s", page)
	}
	if box := get("/c/dev/reply?to=" + q.ID); !strings.Contains(box, `<option value="reviewer" selected>reviewer</option>`) {
		t.Errorf("a reply to reviewer is not addressed to reviewer:\n%s", box)
	}
	for _, tc := range []struct {
		to   string
		code int
	}{{"reviewer", 200}, {"no/such", http.StatusBadRequest}} {
		resp, err := c.PostForm(base+"/c/dev/post", url.Values{"text": {"to " + tc.to}, "to": {tc.to}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("post to %q: %d, want %d", tc.to, resp.StatusCode, tc.code)
		}
	}
	msgs, _, _, err := channel.Newest(root, "dev", 10, nil, func(m *channel.Message) bool { return m.From == "ann" })
	if err != nil || len(msgs) != 1 || msgs[0].To != "reviewer" {
		t.Errorf("posted: %+v (%v), want one to reviewer", msgs, err)
	}
}

// TestPageAgents checks the agents page shows the who board, and the
// board's reload shows a new heartbeat; script in a heartbeat's fields is
// escaped.
func TestPageAgents(t *testing.T) {
	root := tree.Root(t.TempDir())
	if err := presence.Write(root, presence.Status{AgentID: "reviewer", State: presence.StateAwake, Channel: "dev", Host: "<b>h</b>"}); err != nil {
		t.Fatal(err)
	}
	c, base := signedIn(t, web.Config{Root: root})
	get := func(path string) string {
		t.Helper()
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	page := get("/agents")
	for _, want := range []string{`<tr id="agent-reviewer">`, `<a href="/c/dev">#dev</a>`, `&lt;b&gt;h&lt;/b&gt;`, `hx-trigger="every 100ms"`} {
		if !strings.Contains(page, want) {
			t.Errorf("agents page lacks %s:\n%s", want, page)
		}
	}
	if err := presence.Write(root, presence.Status{AgentID: "coder", State: presence.StateAwake, Channel: "dev"}); err != nil {
		t.Fatal(err)
	}
	if board := get("/board"); !strings.Contains(board, `<tr id="agent-coder">`) || strings.Contains(board, "<html") {
		t.Errorf("board reload:\n%s", board)
	}
	if page := get("/agents/board"); !strings.Contains(page, "<title>board · collab</title>") {
		t.Errorf("an agent called board has no page:\n%s", page)
	}
	resp, err := c.Get(base + "/c?name=%23new-one")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/c/new-one" {
		t.Errorf("opening #new-one went to %s", resp.Request.URL)
	}
	resp, err = c.Get(base + "/c?name=..%2Fkeys")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("opening ../keys: %d, want 400", resp.StatusCode)
	}
}

// TestPageKill checks the kill button and its request: a running job that
// the signed-in person asked for has one and gets a kill file by them; one
// that another asked for has none and is refused (jobs.MayKill: 403), and
// a finished or unknown job gets none.
func TestPageKill(t *testing.T) {
	root := tree.Root(t.TempDir())
	run, err := jobs.Start(root, jobs.Job{ID: jobs.NewID(), Agent: "coder", Channel: "dev", Message: "m", From: "ann"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	bobs, err := jobs.Start(root, jobs.Job{ID: jobs.NewID(), Agent: "coder", Channel: "dev", Message: "m2", From: "bob"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done, err := jobs.Start(root, jobs.Job{ID: jobs.NewID(), Agent: "coder", Channel: "dev", Message: "m", From: "bob"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	done.Finish(jobs.Killed, modelcli.Response{}, nil)
	c, base := signedIn(t, web.Config{Root: root})
	resp, err := c.Get(base + "/agents/coder")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Count(string(b), `class="kill"`) != 1 || !strings.Contains(string(b), run.Job().ID+"/kill") {
		t.Errorf("want one kill button, for the running job ann asked for:\n%s", b)
	}
	for _, tc := range []struct {
		id   string
		code int
		asks bool
	}{
		{run.Job().ID, 200, true},
		{bobs.Job().ID, http.StatusForbidden, false},
		{done.Job().ID, http.StatusConflict, false},
		{"job-nope", http.StatusNotFound, false},
	} {
		resp, err := c.Post(base+"/agents/coder/jobs/"+tc.id+"/kill", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code || jobs.KillRequested(root, "coder", tc.id) != tc.asks {
			t.Errorf("kill %s: %d, asked %v; want %d, %v", tc.id, resp.StatusCode, !tc.asks, tc.code, tc.asks)
		}
	}
	if k, err := jobs.ReadKill(root, "coder", run.Job().ID); err != nil || k.By != "ann" {
		t.Errorf("kill file: %+v (%v), want by ann", k, err)
	}
}

// TestPageQuestion checks a needs_input question shows its options as
// buttons to the person it asks, and to no one else.
func TestPageQuestion(t *testing.T) {
	root := tree.Root(t.TempDir())
	for _, to := range []string{"ann", "bob"} {
		q := channel.Message{SessionID: "dev", From: "coder", To: to, Content: channel.Content{Text: "may I? (" + to + ")"}}
		q.SetExtension("needs_input", []byte(`{"job":"job-x","options":["yes","no"]}`))
		if err := (&channel.Writer{Root: root}).Post(&q); err != nil {
			t.Fatal(err)
		}
	}
	c, base := signedIn(t, web.Config{Root: root})
	resp, err := c.Get(base + "/c/dev")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := strings.Count(string(b), `class="answer"`); got != 2 {
		t.Errorf("%d answer buttons, want 2 (yes and no, for ann's question only):\n%s", got, b)
	}
}

// TestPageStatic checks the embedded files are served with an ETag, and a
// browser that has the file gets 304.
func TestPageStatic(t *testing.T) {
	c, base := signedIn(t, web.Config{Root: tree.Root(t.TempDir())})
	resp, err := c.Get(base + "/static/htmx.min.js")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	tag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || tag == "" || !strings.Contains(resp.Header.Get("Content-Type"), "javascript") {
		t.Fatalf("htmx.min.js: %d, ETag %q, %s", resp.StatusCode, tag, resp.Header.Get("Content-Type"))
	}
	req, _ := http.NewRequest("GET", base+"/static/htmx.min.js", nil)
	req.Header.Set("If-None-Match", tag)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("again with If-None-Match: %d, want 304", resp.StatusCode)
	}
}

// TestPageGuarded checks the page's routes are behind the sign-in and the
// cross-site check.
func TestPageGuarded(t *testing.T) {
	root := tree.Root(t.TempDir())
	postMessage(t, root, "dev", "bob", "hi")
	c, base := signedIn(t, web.Config{Root: root})
	for _, path := range []string{"/", "/c/dev", "/c/dev/events", "/c/dev/older?before=x", "/agents", "/board", "/static/page.js"} {
		resp, err := http.Get(base + path) // no session
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a session: %d, want 401", path, resp.StatusCode)
		}
	}
	for _, path := range []string{"/c/dev/post", "/agents/coder/jobs/job-x/kill"} {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader("text=x"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://evil.example")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site POST %s: %d, want 403", path, resp.StatusCode)
		}
	}
	if msgs, _, _, _ := channel.Newest(root, "dev", 10, nil, nil); len(msgs) != 1 {
		t.Errorf("%d messages in dev, want the 1 posted before", len(msgs))
	}
}

// getPage returns a page's body.
func getPage(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d\n%s", u, resp.StatusCode, b)
	}
	return string(b)
}

// reply posts a reply to parent, in parent's thread.
func reply(t *testing.T, root tree.Root, parent channel.Message, from, text string) channel.Message {
	t.Helper()
	m := channel.Message{SessionID: parent.SessionID, From: from, Content: channel.Content{Text: text}}
	m.Metadata.InReplyTo, m.Metadata.Thread = parent.ID, parent.ThreadID()
	if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPageThreads checks replies fold under their thread's first message
// when it is on the page, stay in place with a link when it is not, and
// that the event stream's reply names its thread for page.js to fold.
func TestPageThreads(t *testing.T) {
	root := tree.Root(t.TempDir())
	first := postMessage(t, root, "dev", "bob", "first")
	other := postMessage(t, root, "dev", "cat", "other")
	r1 := reply(t, root, first, "coder", "answer one")
	r2 := reply(t, root, r1, "bob", "answer two") // its thread is first's
	orphan := channel.Message{SessionID: "dev", From: "coder", Content: channel.Content{Text: "late answer"}}
	orphan.Metadata.InReplyTo = "msg-20200101-000000-bob-abcd"
	if err := (&channel.Writer{Root: root}).Post(&orphan); err != nil {
		t.Fatal(err)
	}
	c, base := signedIn(t, web.Config{Root: root})
	page := getPage(t, c, base+"/c/dev")
	thread := regexp.MustCompile(`(?s)<details class="thread"><summary>(.*?)</summary>\s*<ol class="replies" id="replies-` + first.ID + `">(.*?)</ol>\s*</details>`).FindStringSubmatch(page)
	if thread == nil {
		t.Fatalf("no thread under the first message:\n%s", page)
	}
	if thread[1] != "2 replies" || !strings.Contains(thread[2], `id="m-`+r1.ID+`"`) || !strings.Contains(thread[2], `id="m-`+r2.ID+`"`) {
		t.Errorf("thread %q holds:\n%s", thread[1], thread[2])
	}
	for _, id := range []string{other.ID, orphan.ID} {
		if strings.Contains(thread[2], `id="m-`+id+`"`) || !strings.Contains(page, `id="m-`+id+`"`) {
			t.Errorf("%s is not shown in place", id)
		}
	}
	if strings.Count(page, `class="replies"`) != 1 {
		t.Errorf("threads under messages without replies:\n%s", page)
	}
	if !strings.Contains(page, `href="#m-msg-20200101-000000-bob-abcd"`) {
		t.Errorf("the reply whose message is not on the page has no link to it:\n%s", page)
	}
	// Live: the event names the reply's thread.
	_, lines := events(t, c, base+eventsPath(page), nil)
	live := reply(t, root, other, "bob", "live answer")
	if id, data := nextData(t, lines); id != live.ID || !strings.Contains(data, `data-thread="`+other.ID+`"`) {
		t.Errorf("event %s:\n%s", id, data)
	}
}

// eventsPath is the page's event stream URL.
func eventsPath(page string) string {
	m := regexp.MustCompile(`sse-connect="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// unreadOf is the unread count the channel list shows for ch ("": none).
func unreadOf(t *testing.T, page, ch string) string {
	t.Helper()
	re := regexp.MustCompile(`<li><a href="/c/` + ch + `"[^>]*>#` + ch + `</a>(?: <span class="unread"[^>]*>([^<]*)</span>)? <time>`)
	m := re.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("#%s is not in the list:\n%s", ch, page)
	}
	return html.UnescapeString(m[1])
}

// TestPageUnread checks the channel list's unread counts: others'
// messages after the person's cursor, which viewing a channel moves (kept
// in state/PERSON/web-seen.json), capped at 99+.
func TestPageUnread(t *testing.T) {
	root := tree.Root(t.TempDir())
	for i := range 3 {
		postMessage(t, root, "b", "bob", fmt.Sprint("b", i))
	}
	postMessage(t, root, "b", "ann", "mine")  // one's own is never unread
	postMessage(t, root, "a", "bob", "hello") // the sign-in opens a, the newest
	c, base := signedIn(t, web.Config{Root: root})
	page := getPage(t, c, base+"/c/a")
	if got := unreadOf(t, page, "b"); got != "3" {
		t.Errorf("before viewing b: %q unread, want 3", got)
	}
	if got := unreadOf(t, page, "a"); got != "" {
		t.Errorf("the channel being viewed shows %q unread", got)
	}
	getPage(t, c, base+"/c/b")
	page = getPage(t, c, base+"/c/a")
	if got := unreadOf(t, page, "b"); got != "" {
		t.Errorf("after viewing b: %q unread", got)
	}
	if _, err := os.Stat(filepath.Join(root.State("ann"), "web-seen.json")); err != nil {
		t.Errorf("the cursor file: %v", err)
	}
	postMessage(t, root, "b", "bob", "new one")
	postMessage(t, root, "b", "cat", "new two")
	if got := unreadOf(t, getPage(t, c, base+"/c/a"), "b"); got != "2" {
		t.Errorf("after two more: %q unread, want 2", got)
	}
	for i := range 120 {
		postMessage(t, root, "b", "bob", fmt.Sprint("flood", i))
	}
	if got := unreadOf(t, getPage(t, c, base+"/c/a"), "b"); got != "99+" {
		t.Errorf("after 122: %q unread, want 99+", got)
	}
	// The list's order is activity: the sign-in page opens on b now.
	if !strings.Contains(getPage(t, c, base+"/"), `<h1>#b</h1>`) {
		t.Error("/ does not open the most recently active channel")
	}
}
