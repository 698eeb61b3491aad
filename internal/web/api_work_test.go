package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/documents"
	"github.com/collabdev/collab/internal/workspace/sessions"
	"github.com/collabdev/collab/internal/workspace/task"
	"github.com/collabdev/collab/presence"
)

// sameSite are the headers a browser sends with a same-origin POST.
func (ts *testServer) sameSite() []string {
	return []string{"Origin", ts.ts.URL, "Sec-Fetch-Site", "same-origin"}
}

// addTasks makes a board in channel dev: t1 claimed by bob, t2 pending
// waiting for t1, t3 done.
func addTasks(t *testing.T, root tree.Root) {
	t.Helper()
	b, err := task.New(root, "dev")
	if err != nil {
		t.Fatal(err)
	}
	for _, nt := range []task.NewTask{{Title: "lease renewal", By: "ann"}, {Title: "<b>docs</b>", Depends: []string{"t1"}, By: "ann"}, {Title: "ship it", By: "ann"}} {
		if _, err := b.Add(nt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Claim("t1", "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claim("t3", "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Finish("t3", "bob", "shipped"); err != nil {
		t.Fatal(err)
	}
	// bob shows signs of life, so its claim is not swept.
	host, _ := os.Hostname()
	if err := presence.Write(root, presence.Status{AgentID: "bob", State: presence.StateAwake, Substate: presence.SubIdle,
		Host: host, WatcherPID: os.Getpid(), Channel: "dev", Timestamp: presence.FormatTime(time.Now())}); err != nil {
		t.Fatal(err)
	}
}

func TestAPITasks(t *testing.T) {
	ts := newTestServer(t, Config{})
	addTasks(t, ts.root)
	code, body := ts.do(t, "GET", "/api/tasks?channel=dev", "")
	var tb TaskBoard
	if err := json.Unmarshal([]byte(body), &tb); code != 200 || err != nil {
		t.Fatalf("%d %s %v", code, body, err)
	}
	got := map[string][]string{}
	for _, c := range tb.Columns {
		for _, tk := range c.Tasks {
			got[c.State] = append(got[c.State], tk.ID)
		}
		if c.Total != len(c.Tasks) {
			t.Errorf("column %s: total %d, %d tasks", c.State, c.Total, len(c.Tasks))
		}
	}
	if fmt.Sprint(got) != "map[claimed:[t1] done:[t3] pending:[t2]]" || len(tb.Columns) != 4 {
		t.Errorf("board %v (%d columns)", got, len(tb.Columns))
	}
	code, body = ts.do(t, "GET", "/api/tasks?channel=dev&limit=1", "")
	if code != 200 || !strings.Contains(body, `"total":1`) {
		t.Errorf("limit: %d %s", code, body)
	}
	if code, body := ts.do(t, "GET", "/api/tasks?channel=empty", ""); code != 200 || strings.Count(body, `"tasks":[]`) != 4 {
		t.Errorf("empty channel: %d %s", code, body)
	}
	for _, q := range []string{"", "?channel=", "?channel=../x", "?channel=Bad!", "?channel=dev&limit=0", "?channel=dev&limit=501", "?channel=dev&offset=-1"} {
		code, body := ts.do(t, "GET", "/api/tasks"+q, "")
		if code != http.StatusBadRequest {
			t.Errorf("%q: %d %s", q, code, body)
		}
		jsonError(t, body)
	}
}

func TestAPIDocs(t *testing.T) {
	ts := newTestServer(t, Config{})
	f, err := documents.New(ts.root, "dev", documents.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v1, err := f.Create(context.Background(), "notes.md", "first\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Create(context.Background(), "plans/auth.md", "auth\n"); err != nil {
		t.Fatal(err)
	}
	code, body := ts.do(t, "GET", "/api/docs?channel=dev", "")
	var l DocList
	if err := json.Unmarshal([]byte(body), &l); code != 200 || err != nil || l.Total != 2 || len(l.Docs) != 2 || l.Docs[1].File != "plans/auth.md" {
		t.Fatalf("list: %d %s %v", code, body, err)
	}
	if code, body := ts.do(t, "GET", "/api/docs?channel=dev&limit=1&offset=1", ""); code != 200 || !strings.Contains(body, "plans/auth.md") || strings.Contains(body, "notes.md") {
		t.Errorf("page: %d %s", code, body)
	}
	if code, body := ts.do(t, "GET", "/api/docs?channel=none", ""); code != 200 || !strings.Contains(body, `"docs":[]`) {
		t.Errorf("no documents: %d %s", code, body)
	}
	code, body = ts.do(t, "GET", "/api/docs/plans/auth.md?channel=dev", "")
	var d documents.Doc
	if err := json.Unmarshal([]byte(body), &d); code != 200 || err != nil || d.Content != "auth\n" || d.Version != documents.Version("auth\n") {
		t.Fatalf("read: %d %s %v", code, body, err)
	}
	if code, body := ts.do(t, "GET", "/api/docs/nope.md?channel=dev", ""); code != http.StatusNotFound {
		t.Errorf("missing: %d %s", code, body)
	}

	// A write at the version read replaces the document.
	code, body = ts.do(t, "PUT", "/api/docs/notes.md?channel=dev", fmt.Sprintf(`{"content":"second\n","version":%q}`, v1), ts.sameSite()...)
	var w struct{ File, Version string }
	if err := json.Unmarshal([]byte(body), &w); code != 200 || err != nil || w.Version != documents.Version("second\n") {
		t.Fatalf("write: %d %s %v", code, body, err)
	}
	// Another write from the old version is refused with the current text.
	code, body = ts.do(t, "POST", "/api/docs/notes.md?channel=dev", fmt.Sprintf(`{"content":"mine\n","version":%q}`, v1), ts.sameSite()...)
	var c DocConflict
	if err := json.Unmarshal([]byte(body), &c); code != http.StatusConflict || err != nil || !c.Exists || c.Content != "second\n" || c.Version != w.Version || c.Error == "" {
		t.Fatalf("conflict: %d %s %v", code, body, err)
	}
	// Creating (no version) an existing document is a conflict too.
	code, body = ts.do(t, "PUT", "/api/docs/notes.md?channel=dev", `{"content":"mine\n"}`, ts.sameSite()...)
	if err := json.Unmarshal([]byte(body), &c); code != http.StatusConflict || err != nil || c.Content != "second\n" {
		t.Fatalf("create over: %d %s %v", code, body, err)
	}
	if got, _ := f.Read("notes.md"); got.Content != "second\n" {
		t.Fatalf("a refused write changed the document: %q", got.Content)
	}
	// A write at a version of a deleted document: conflict, exists false.
	code, body = ts.do(t, "PUT", "/api/docs/gone.md?channel=dev", `{"content":"x","version":"abc"}`, ts.sameSite()...)
	if err := json.Unmarshal([]byte(body), &c); code != http.StatusConflict || err != nil || c.Exists {
		t.Fatalf("gone: %d %s %v", code, body, err)
	}
	if code, body := ts.do(t, "PUT", "/api/docs/new/one.md?channel=dev", `{"content":"hello\n"}`, ts.sameSite()...); code != http.StatusCreated {
		t.Errorf("create: %d %s", code, body)
	}

	bad := []struct{ method, path, body string }{
		{"GET", "/api/docs", ""},
		{"GET", "/api/docs?channel=Bad!", ""},
		{"GET", "/api/docs/notes.md", ""},
		{"GET", "/api/docs/.hidden?channel=dev", ""},
		{"GET", "/api/docs/a/../../x?channel=dev", ""},
		{"GET", "/api/docs/a%2F..%2F..%2Fx?channel=dev", ""},
		{"GET", "/api/docs/a b?channel=dev", ""},
		{"PUT", "/api/docs/.x?channel=dev", `{"content":"x"}`},
		{"PUT", "/api/docs/notes.md?channel=dev", `{"content":"x","extra":1}`},
		{"PUT", "/api/docs/notes.md?channel=dev", `not json`},
		{"PUT", "/api/docs/notes.md?channel=../x", `{"content":"x"}`},
	}
	for _, b := range bad {
		var hdr []string
		if b.method != "GET" {
			hdr = ts.sameSite()
		}
		code, body := ts.do(t, b.method, strings.ReplaceAll(b.path, " ", "%20"), b.body, hdr...)
		if code != http.StatusBadRequest && code != http.StatusNotFound {
			t.Errorf("%s %s: %d %s", b.method, b.path, code, body)
		}
		jsonError(t, body)
	}
	if got, _ := f.Read("notes.md"); got.Content != "second\n" {
		t.Fatalf("a refused write changed the document: %q", got.Content)
	}
}

// runningInstance records a running instance of workflow review whose
// agent is AWAKE on this host.
func runningInstance(t *testing.T, root tree.Root, instance string) workflow.Record {
	t.Helper()
	host, _ := os.Hostname()
	agent := "reviewer" + workflow.Sep + instance
	r := workflow.Record{Name: "review", Instance: instance, File: "review.yaml", Host: host, PID: os.Getpid(),
		Started: time.Now().UTC(), Status: workflow.Running, Agents: []string{agent}, Channel: "review-" + instance}
	if err := workflow.WriteRecord(root, &r); err != nil {
		t.Fatal(err)
	}
	if err := presence.Write(root, presence.Status{AgentID: agent, State: presence.StateAwake, Substate: presence.SubIdle,
		Host: host, WatcherPID: os.Getpid(), Channel: r.Channel, Timestamp: presence.FormatTime(time.Now())}); err != nil {
		t.Fatal(err)
	}
	return r
}

// delegation records a running delegated session.
func delegation(t *testing.T, root tree.Root, id, host string) *sessions.Session {
	t.Helper()
	s := &sessions.Session{ID: id, Agent: "ann-" + id, DelegatedBy: "ann", Depth: 1, Repo: "/src/repo", Worktree: "/src/wt-" + id,
		Branch: "delegate/" + id, Base: "main", Channel: sessions.Channel(id), CLI: "claude", Host: host,
		Created: time.Now().UTC(), Status: sessions.Running}
	if err := sessions.Create(root, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAPIWorkflows(t *testing.T) {
	ts := newTestServer(t, Config{})
	if code, body := ts.do(t, "GET", "/api/workflows", ""); code != 200 || !strings.Contains(body, `"instances":[]`) {
		t.Fatalf("none: %d %s", code, body)
	}
	runningInstance(t, ts.root, "i1")
	done := workflow.Record{Name: "review", Instance: "i0", Status: workflow.Done, Started: time.Now().Add(-time.Hour).UTC()}
	if err := workflow.WriteRecord(ts.root, &done); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	delegation(t, ts.root, "ab12", host)
	code, body := ts.do(t, "GET", "/api/workflows", "")
	var got struct {
		Instances []Instance
		Total     int
	}
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || got.Total != 3 {
		t.Fatalf("%d %s %v", code, body, err)
	}
	if i := got.Instances; i[0].ID() != "review@i1" || i[0].Status != workflow.Running || i[1].ID() != "review@i0" ||
		i[2].Name != "delegate" || i[2].Instance != "ab12" || i[2].Status != workflow.Dead || i[2].Delegation == nil {
		t.Errorf("instances %+v", i)
	}
	if code, body := ts.do(t, "GET", "/api/workflows?limit=1&offset=2", ""); code != 200 || !strings.Contains(body, `"instance":"ab12"`) || strings.Contains(body, "i1") {
		t.Errorf("page: %d %s", code, body)
	}

	code, body = ts.do(t, "POST", "/api/workflows/review@i1/stop", "", ts.sameSite()...)
	if code != http.StatusAccepted || !strings.Contains(body, `"stop":"asked"`) {
		t.Fatalf("stop: %d %s", code, body)
	}
	data, err := os.ReadFile(ts.root.Workflows() + "/" + workflow.StopNameBy("review", "i1", os.Geteuid()))
	if err != nil || !strings.Contains(string(data), `"by":"alice"`) {
		t.Fatalf("stop file: %s %v", data, err)
	}
	for _, c := range []struct {
		id   string
		code int
	}{
		{"review@i0", http.StatusConflict},
		{"review@i9", http.StatusNotFound},
		{"review", http.StatusBadRequest},
		{"review@", http.StatusBadRequest},
		{"@i1", http.StatusBadRequest},
		{"Bad!@i1", http.StatusBadRequest},
		{"review@..", http.StatusBadRequest},
		{"review@a--b", http.StatusBadRequest},
	} {
		code, body := ts.do(t, "POST", "/api/workflows/"+c.id+"/stop", "", ts.sameSite()...)
		if code != c.code {
			t.Errorf("%s: %d %s, want %d", c.id, code, body, c.code)
		}
		jsonError(t, body)
	}
}

func TestAPIDelegations(t *testing.T) {
	ts := newTestServer(t, Config{})
	host, _ := os.Hostname()
	delegation(t, ts.root, "ab12", host)
	delegation(t, ts.root, "cd34", "elsewhere")
	gone := delegation(t, ts.root, "ef56", host)
	gone.Status = sessions.Removed
	if err := sessions.Update(ts.root, gone); err != nil {
		t.Fatal(err)
	}
	code, body := ts.do(t, "GET", "/api/delegations", "")
	var got struct {
		Delegations []Delegation
		Total       int
	}
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || got.Total != 2 || got.Delegations[0].State != presence.StateOffline {
		t.Fatalf("%d %s %v", code, body, err)
	}
	if code, body := ts.do(t, "GET", "/api/delegations?all=true", ""); code != 200 || !strings.Contains(body, "ef56") {
		t.Errorf("all: %d %s", code, body)
	}
	if code, body := ts.do(t, "GET", "/api/delegations?all=maybe", ""); code != http.StatusBadRequest {
		t.Errorf("all=maybe: %d %s", code, body)
	}
	code, body = ts.do(t, "POST", "/api/delegations/ab12/stop", "", ts.sameSite()...)
	if code != 200 || !strings.Contains(body, `"status":"stopped"`) {
		t.Fatalf("stop: %d %s", code, body)
	}
	if s, err := sessions.Read(ts.root, "ab12"); err != nil || s.Status != sessions.Stopped {
		t.Fatalf("record after stop: %+v %v", s, err)
	}
	for _, c := range []struct {
		id   string
		code int
	}{
		{"cd34", http.StatusConflict}, // another host
		{"ef56", http.StatusConflict}, // removed
		{"0000", http.StatusNotFound},
		{"AB12", http.StatusBadRequest},
		{"zzzz", http.StatusBadRequest},
		{"abc", http.StatusBadRequest},
	} {
		code, body := ts.do(t, "POST", "/api/delegations/"+c.id+"/stop", "", ts.sameSite()...)
		if code != c.code {
			t.Errorf("%s: %d %s, want %d", c.id, code, body, c.code)
		}
		jsonError(t, body)
	}
}

// TestAPIWorkCrossSite: the work endpoints that change something refuse a
// cross-site request, and change nothing.
func TestAPIWorkCrossSite(t *testing.T) {
	ts := newTestServer(t, Config{})
	f, _ := documents.New(ts.root, "dev", documents.Options{})
	v, err := f.Create(context.Background(), "notes.md", "mine\n")
	if err != nil {
		t.Fatal(err)
	}
	runningInstance(t, ts.root, "i1")
	host, _ := os.Hostname()
	delegation(t, ts.root, "ab12", host)
	for _, req := range []struct{ method, path, body string }{
		{"PUT", "/api/docs/notes.md?channel=dev", fmt.Sprintf(`{"content":"evil\n","version":%q}`, v)},
		{"POST", "/api/docs/notes.md?channel=dev", fmt.Sprintf(`{"content":"evil\n","version":%q}`, v)},
		{"POST", "/api/workflows/review@i1/stop", ""},
		{"POST", "/api/delegations/ab12/stop", ""},
		{"POST", "/docs/notes.md?channel=dev", ""},
		{"POST", "/workflows/review@i1/stop", ""},
		{"POST", "/delegations/ab12/stop", ""},
	} {
		code, body := ts.do(t, req.method, req.path, req.body, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
		if code != http.StatusForbidden {
			t.Errorf("%s %s: %d %s", req.method, req.path, code, body)
		}
	}
	if d, _ := f.Read("notes.md"); d.Content != "mine\n" {
		t.Errorf("document changed: %q", d.Content)
	}
	if stopAsked(ts.root, "review", "i1") {
		t.Error("a cross-site stop wrote the stop file")
	}
	if s, _ := sessions.Read(ts.root, "ab12"); s.Status != sessions.Running {
		t.Errorf("session %s", s.Status)
	}
}

// stopAsked is workflow.StopRequested for the test's own account.
func stopAsked(root tree.Root, name, instance string) bool {
	stop, _ := workflow.StopRequested(root, name, instance, os.Geteuid())
	return stop
}
