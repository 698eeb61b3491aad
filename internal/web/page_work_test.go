package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/workspace/documents"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/internal/workspace/task"
)

// form is the headers of a same-origin form post.
func (ts *testServer) form() []string {
	return append(ts.sameSite(), "Content-Type", "application/x-www-form-urlencoded")
}

func TestPageTasks(t *testing.T) {
	ts := newTestServer(t, Config{})
	if code, body := ts.do(t, "GET", "/tasks", ""); code != 200 || !strings.Contains(body, "No tasks yet") {
		t.Fatalf("no tasks: %d %s", code, body)
	}
	addTasks(t, ts.root)
	code, body := ts.do(t, "GET", "/tasks", "")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	for _, want := range []string{`data-state="claimed"`, `data-id="t1"`, "claimed by bob", "waits for t1", "&lt;b&gt;docs&lt;/b&gt;", "shipped", `href="/tasks"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the board lacks %q", want)
		}
	}
	// t1 is in the claimed column, t3 in done.
	for state, id := range map[string]string{"claimed": "t1", "done": "t3", "pending": "t2"} {
		col := body[strings.Index(body, `data-state="`+state+`"`):]
		col = col[:strings.Index(col, "</section>")]
		if !strings.Contains(col, `data-id="`+id+`"`) {
			t.Errorf("%s not in column %s", id, state)
		}
	}
	if code, _ := ts.do(t, "GET", "/tasks?channel=Bad!", ""); code != http.StatusBadRequest {
		t.Errorf("bad channel: %d", code)
	}
}

// TestPageTasksBlockedByFailed: a task whose dependency failed is shown
// blocked by it, in the words of Task.State (as collab task list says it),
// not as waiting for it.
func TestPageTasksBlockedByFailed(t *testing.T) {
	ts := newTestServer(t, Config{})
	b, err := task.New(ts.root, "dev")
	if err != nil {
		t.Fatal(err)
	}
	for _, nt := range []task.NewTask{
		{Title: "port to arm64", By: "ann"},
		{Title: "bench it", By: "ann"},
		{Title: "ship arm64", Depends: []string{"t1", "t2"}, By: "ann"},
		{Title: "announce", Depends: []string{"t1"}, By: "ann"},
	} {
		if _, err := b.Add(nt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Claim("t1", "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Fail("t1", "bob", "no arm64 runner"); err != nil {
		t.Fatal(err)
	}
	code, body := ts.do(t, "GET", "/tasks?channel=dev", "")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	for id, want := range map[string]string{
		"t2": `<p class="ready">ready</p>`,
		"t3": `<p class="blocked failed">pending, blocked by failed t1; waits for t2</p>`,
		"t4": `<p class="blocked failed">pending, blocked by failed t1</p>`,
	} {
		i := strings.Index(body, `data-id="`+id+`"`)
		if i < 0 {
			t.Fatalf("%s not on the board", id)
		}
		card := body[i:]
		card = card[:strings.Index(card, "</li>")]
		if !strings.Contains(card, want) {
			t.Errorf("%s shows %s; want %s", id, card, want)
		}
		if strings.Contains(card, "waits for t1") {
			t.Errorf("%s waits for the failed t1: %s", id, card)
		}
	}
	// The words are the task package's one rule.
	t4, err := b.Get("t4")
	if err != nil {
		t.Fatal(err)
	}
	if st := t4.State(nil); !strings.Contains(body, html.EscapeString(st)) {
		t.Errorf("the board lacks t4's state %q", st)
	}
}

func TestPageDocConflict(t *testing.T) {
	ts := newTestServer(t, Config{})
	f, _ := documents.New(ts.root, "dev", documents.Options{})
	v1, err := f.Create(context.Background(), "plans/auth.md", "base <i>text</i>\n")
	if err != nil {
		t.Fatal(err)
	}
	code, body := ts.do(t, "GET", "/docs", "")
	if code != 200 || !strings.Contains(body, `href="/docs/plans/auth.md?channel=dev"`) {
		t.Fatalf("list: %d %s", code, body)
	}
	code, body = ts.do(t, "GET", "/docs/plans/auth.md?channel=dev", "")
	if code != 200 || !strings.Contains(body, `name="version" value="`+v1+`"`) || !strings.Contains(body, "base &lt;i&gt;text&lt;/i&gt;") {
		t.Fatalf("read: %d %s", code, body)
	}
	// Someone else writes meanwhile.
	v2, err := f.Write(context.Background(), "plans/auth.md", "theirs\n", v1)
	if err != nil {
		t.Fatal(err)
	}
	code, body = ts.do(t, "POST", "/docs/plans/auth.md?channel=dev", url.Values{"content": {"mine\r\nedit\r\n"}, "version": {v1}}.Encode(), ts.form()...)
	if code != http.StatusConflict {
		t.Fatalf("conflict: %d %s", code, body)
	}
	if !strings.Contains(body, `id="conflict"`) || !strings.Contains(body, `<pre class="theirs">theirs`) || !strings.Contains(body, v2) ||
		!strings.Contains(body, "mine\nedit\n</textarea>") || !strings.Contains(body, `name="version" value="`+v2+`"`) {
		t.Errorf("the conflict page: %s", body)
	}
	if d, _ := f.Read("plans/auth.md"); d.Content != "theirs\n" {
		t.Fatalf("overwritten: %q", d.Content)
	}
	// Saving again from the version shown replaces it (line ends as typed).
	req, _ := http.NewRequest("POST", ts.ts.URL+"/docs/plans/auth.md?channel=dev", strings.NewReader(url.Values{"content": {"mine\r\n"}, "version": {v2}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", ts.ts.URL)
	noFollow := *ts.client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/docs/plans/auth.md?channel=dev" {
		t.Fatalf("save: %s %s", resp.Status, resp.Header.Get("Location"))
	}
	if d, _ := f.Read("plans/auth.md"); d.Content != "mine\n" {
		t.Fatalf("saved %q", d.Content)
	}
	// A new document: the empty editor creates; creating over one is a conflict.
	code, body = ts.do(t, "GET", "/docs?channel=dev&open=new.md", "")
	if code != 200 || !strings.Contains(body, "A new document") {
		t.Errorf("open new: %d %s", code, body)
	}
	code, body = ts.do(t, "POST", "/docs/plans/auth.md?channel=dev", url.Values{"content": {"x"}, "version": {""}}.Encode(), ts.form()...)
	if code != http.StatusConflict || !strings.Contains(body, "mine\n</pre>") {
		t.Errorf("create over: %d %s", code, body)
	}
	for _, p := range []string{"/docs/.x?channel=dev", "/docs/a?channel=Bad!", "/docs/a", "/docs?channel=dev&open=../x"} {
		if code, body := ts.do(t, "GET", p, ""); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", p, code, body)
		}
	}
}

func TestPageWorkflows(t *testing.T) {
	ts := newTestServer(t, Config{})
	runningInstance(t, ts.root, "i1")
	host, _ := os.Hostname()
	delegation(t, ts.root, "ab12", host)
	code, body := ts.do(t, "GET", "/workflows", "")
	if code != 200 || !strings.Contains(body, `action="/workflows/review@i1/stop"`) || !strings.Contains(body, `action="/delegations/ab12/stop"`) {
		t.Fatalf("%d %s", code, body)
	}
	code, body = ts.do(t, "POST", "/workflows/review@i1/stop", "", ts.form()...)
	if code != http.StatusAccepted || !strings.Contains(body, "review@i1: stop asked") || !stopAsked(ts.root, "review", "i1") {
		t.Errorf("stop: %d %s", code, body)
	}
	code, body = ts.do(t, "POST", "/delegations/ab12/stop", "", ts.form()...)
	if code != 200 || !strings.Contains(body, "ann-ab12 stopped") {
		t.Errorf("stop delegation: %d %s", code, body)
	}
	if s, _ := sessions.Read(ts.root, "ab12"); s.Status != sessions.Stopped {
		t.Errorf("session %s", s.Status)
	}
	code, body = ts.do(t, "POST", "/delegations/ab12/stop", "", ts.form()...)
	if code != 200 || strings.Contains(body, `action="/delegations/ab12/stop"`) {
		t.Errorf("stopped again: %d %s", code, html.UnescapeString(body))
	}
	code, body = ts.do(t, "POST", "/workflows/review@i9/stop", "", ts.form()...)
	if code != http.StatusNotFound || !strings.Contains(body, `class="notice bad"`) {
		t.Errorf("missing: %d %s", code, body)
	}
}
