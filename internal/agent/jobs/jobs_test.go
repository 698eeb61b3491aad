package jobs_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

const agent = "codex"

// clock is a fake clock that moves only when told to.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newJob returns the record of a job answering message msg.
func newJob(msg string) jobs.Job {
	return jobs.Job{
		ID: oldID(msg), Agent: agent, Host: "host-1", Channel: "general",
		Message: msg, From: "alice", CLI: "fake",
	}
}

func mustStart(t *testing.T, root tree.Root, j jobs.Job, now func() time.Time) *jobs.Recorder {
	t.Helper()
	r, err := jobs.Start(root, j, now)
	if err != nil {
		t.Fatalf("Start %s: %v", j.ID, err)
	}
	return r
}

func mustRead(t *testing.T, root tree.Root, agent, id string) jobs.Job {
	t.Helper()
	j, err := jobs.Read(root, agent, id)
	if err != nil {
		t.Fatalf("Read %s: %v", id, err)
	}
	return j
}

func kinds(es []modelcli.Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Kind)
	}
	return out
}

func jobIDs(js []jobs.Job) []string {
	var out []string
	for _, j := range js {
		out = append(out, j.ID)
	}
	return out
}

// noTemps fails if dir holds anything but published records and kill
// files: every write is a temp file renamed into place.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, ".") || !(strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".kill")) {
			t.Errorf("left in %s: %s", dir, n)
		}
	}
}

// TestRecordLifecycle: Start, Event, Update and Finish each leave a whole
// record on disk that Read, List and Find return.
func TestRecordLifecycle(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	clk := newClock()
	j := newJob("msg-20260310-120000-alice-0001")
	j.Session = "S0"
	j.Resumed = true
	r := mustStart(t, root, j, clk.Now)

	got := mustRead(t, root, agent, j.ID)
	if got.Status != jobs.Running || got.Done() {
		t.Errorf("after Start: status %q (done %v), want running", got.Status, got.Done())
	}
	if !got.Started.Equal(clk.Now()) {
		t.Errorf("Started = %v, want the clock's %v", got.Started, clk.Now())
	}
	if got.Session != "S0" || !got.Resumed || got.From != "alice" || got.CLI != "fake" || got.Host != "host-1" {
		t.Errorf("after Start: record %+v lost fields of %+v", got, j)
	}

	clk.Add(time.Second)
	r.Event(modelcli.Event{Kind: modelcli.EventStarted, Text: "session S0"})
	got = mustRead(t, root, agent, j.ID)
	if k := kinds(got.Events); !slices.Equal(k, []string{modelcli.EventStarted}) {
		t.Fatalf("after a started event: events %v, want [started] on disk at once", k)
	}
	if !got.Events[0].Time.Equal(clk.Now()) {
		t.Errorf("event time = %v, want the clock's %v (filled in when zero)", got.Events[0].Time, clk.Now())
	}

	r.Update(func(j *jobs.Job) { j.Reply = "msg-reply" })
	if got = mustRead(t, root, agent, j.ID); got.Reply != "msg-reply" {
		t.Errorf("after Update: reply %q, want msg-reply", got.Reply)
	}

	clk.Add(2 * time.Second)
	resp := modelcli.Response{
		Text: "done", Session: "S1", CostUSD: 0.25,
		Usage: modelcli.Usage{Input: 100, Output: 20, CacheRead: 7, CacheWrite: 3},
	}
	fin := r.Finish(jobs.Completed, resp, nil)
	got = mustRead(t, root, agent, j.ID)
	if got.Status != jobs.Completed || !got.Done() {
		t.Errorf("after Finish: status %q, want completed", got.Status)
	}
	if !got.Ended.Equal(clk.Now()) {
		t.Errorf("Ended = %v, want %v", got.Ended, clk.Now())
	}
	if got.Session != "S1" || got.CostUSD != 0.25 || got.Usage != resp.Usage || got.Error != "" || got.Question != nil {
		t.Errorf("after Finish: session %q cost %v usage %+v error %q question %v; want S1, 0.25, %+v, no error, no question",
			got.Session, got.CostUSD, got.Usage, got.Error, got.Question, resp.Usage)
	}
	if fin.ID != got.ID || fin.Status != got.Status || len(fin.Events) != len(got.Events) || fin.Reply != "msg-reply" {
		t.Errorf("Finish returned %+v, want the record %+v", fin, got)
	}
	if r.Err() != nil {
		t.Errorf("Err = %v", r.Err())
	}
	if c := r.Job(); c.Status != jobs.Completed || c.ID != j.ID {
		t.Errorf("Job() = %+v", c)
	}

	list, err := jobs.List(root, agent)
	if err != nil || len(list) != 1 || list[0].ID != j.ID || list[0].Status != jobs.Completed {
		t.Errorf("List = %v, %v; want the one completed job", jobIDs(list), err)
	}
	found, err := jobs.Find(root, j.ID)
	if err != nil || found.ID != j.ID || found.Agent != agent || found.Reply != "msg-reply" {
		t.Errorf("Find = %+v, %v", found, err)
	}
	noTemps(t, root.Jobs(agent))
}

// TestProgressCoalesced: progress and tool calls rewrite the record at
// most every half second; other events at once; the final record has
// every event.
func TestProgressCoalesced(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	clk := newClock()
	j := newJob("msg-20260310-120000-alice-0002")
	r := mustStart(t, root, j, clk.Now)
	onDisk := func() int { return len(mustRead(t, root, agent, j.ID).Events) }

	steps := []struct {
		after  time.Duration // clock advance before the event
		kind   string
		onDisk int // events in the record on disk after it
	}{
		{100 * time.Millisecond, modelcli.EventProgress, 0}, // 100 ms after Start's write
		{100 * time.Millisecond, modelcli.EventToolCall, 0},
		{200 * time.Millisecond, modelcli.EventProgress, 0}, // 400 ms
		{200 * time.Millisecond, modelcli.EventProgress, 4}, // 600 ms: written, with all before it
		{100 * time.Millisecond, modelcli.EventProgress, 4},
		{100 * time.Millisecond, modelcli.EventToolCall, 4},
		{0, modelcli.EventNeedsInput, 7}, // not progress: at once
		{100 * time.Millisecond, modelcli.EventProgress, 7},
	}
	for i, s := range steps {
		clk.Add(s.after)
		r.Event(modelcli.Event{Kind: s.kind, Text: fmt.Sprintf("event %d", i)})
		if n := onDisk(); n != s.onDisk {
			t.Errorf("after event %d (%s): %d events on disk, want %d", i, s.kind, n, s.onDisk)
		}
	}
	r.Finish(jobs.Completed, modelcli.Response{Text: "ok"}, nil)
	got := mustRead(t, root, agent, j.ID)
	if len(got.Events) != len(steps) {
		t.Fatalf("final record has %d events, want all %d", len(got.Events), len(steps))
	}
	for i, e := range got.Events {
		if want := fmt.Sprintf("event %d", i); e.Text != want || e.Kind != steps[i].kind {
			t.Errorf("event %d = %s %q, want %s %q", i, e.Kind, e.Text, steps[i].kind, want)
		}
	}
}

// TestFinishError: a failed run ends with an error event (one, even if the
// CLI reported the error itself).
func TestFinishError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		events     []modelcli.Event
		status     string
		err        error
		wantKinds  []string
		wantLast   string // text of the last event
		wantErrStr string
	}{
		{
			name:   "error appended",
			events: []modelcli.Event{{Kind: modelcli.EventProgress, Text: "thinking"}},
			status: jobs.Failed, err: errors.New("exit status 1"),
			wantKinds: []string{modelcli.EventProgress, modelcli.EventError},
			wantLast:  "exit status 1", wantErrStr: "exit status 1",
		},
		{
			name:   "CLI's error event kept, not doubled",
			events: []modelcli.Event{{Kind: modelcli.EventError, Text: "API overloaded"}},
			status: jobs.Failed, err: errors.New("exit status 1"),
			wantKinds: []string{modelcli.EventError},
			wantLast:  "API overloaded", wantErrStr: "exit status 1",
		},
		{
			name:   "killed with no events",
			status: jobs.Killed, err: errors.New("killed by request"),
			wantKinds: []string{modelcli.EventError},
			wantLast:  "killed by request", wantErrStr: "killed by request",
		},
		{
			name:      "success adds nothing",
			events:    []modelcli.Event{{Kind: modelcli.EventCompleted, Text: "done"}},
			status:    jobs.Completed,
			wantKinds: []string{modelcli.EventCompleted},
			wantLast:  "done",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			clk := newClock()
			j := newJob("msg-20260310-120000-alice-0003")
			r := mustStart(t, root, j, clk.Now)
			for _, e := range tt.events {
				r.Event(e)
			}
			clk.Add(time.Second)
			r.Finish(tt.status, modelcli.Response{}, tt.err)
			got := mustRead(t, root, agent, j.ID)
			if got.Status != tt.status || got.Error != tt.wantErrStr {
				t.Errorf("status %q error %q, want %q %q", got.Status, got.Error, tt.status, tt.wantErrStr)
			}
			if k := kinds(got.Events); !slices.Equal(k, tt.wantKinds) {
				t.Fatalf("events %v, want %v", k, tt.wantKinds)
			}
			last := got.Events[len(got.Events)-1]
			if last.Text != tt.wantLast {
				t.Errorf("last event text %q, want %q", last.Text, tt.wantLast)
			}
			if tt.err != nil && len(tt.events) == 0 && !last.Time.Equal(clk.Now()) {
				t.Errorf("error event at %v, want the end %v", last.Time, clk.Now())
			}
		})
	}
}

// TestPrune: starting a job keeps every running job and the newest Keep
// finished ones, with their kill files; older records and kill files go.
func TestPrune(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	clk := newClock()
	msg := func(i int) string { return fmt.Sprintf("msg-20260310-120000-alice-%04d", i) }

	// The oldest job is still running: age alone must not remove it.
	old := mustStart(t, root, newJob(msg(0)), clk.Now)
	const finished = 25
	for i := 1; i <= finished; i++ {
		clk.Add(time.Second)
		r := mustStart(t, root, newJob(msg(i)), clk.Now)
		r.Finish(jobs.Completed, modelcli.Response{Text: "ok"}, nil)
		if i == 1 || i == finished {
			if err := jobs.RequestKill(root, agent, oldID(msg(i)), "test", nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := jobs.RequestKill(root, agent, oldID(msg(0)), "test", nil); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	mustStart(t, root, newJob(msg(99)), clk.Now) // running, newest

	list, err := jobs.List(root, agent)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{oldID(msg(99))}
	for i := finished; i > finished-jobs.Keep; i-- {
		want = append(want, oldID(msg(i)))
	}
	want = append(want, oldID(msg(0)))
	if got := jobIDs(list); !slices.Equal(got, want) {
		t.Errorf("after pruning, jobs newest first:\n got %v\nwant %v", got, want)
	}
	for _, tt := range []struct {
		id   string
		want bool
	}{
		{oldID(msg(0)), true},        // running
		{oldID(msg(finished)), true}, // kept
		{oldID(msg(1)), false},       // pruned with its record
		{oldID(msg(finished - jobs.Keep)), false},
	} {
		if got := jobs.KillRequested(root, agent, tt.id); got != tt.want {
			t.Errorf("KillRequested(%s) = %v after pruning, want %v", tt.id, got, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(root.Jobs(agent), oldID(msg(1))+".json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the oldest finished record is still there: %v", err)
	}
	// The old running recorder still writes its record.
	old.Finish(jobs.Completed, modelcli.Response{Text: "late"}, nil)
	if got := mustRead(t, root, agent, oldID(msg(0))); got.Status != jobs.Completed {
		t.Errorf("the long-running job: status %q, want completed", got.Status)
	}
	noTemps(t, root.Jobs(agent))
}

// TestKillRequest: anyone may ask; the request is a control file the
// watcher sees; asking twice is fine.
func TestKillRequest(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	j := newJob("msg-20260310-120000-alice-0004")
	other := newJob("msg-20260310-120000-alice-0005")
	mustStart(t, root, j, nil)
	mustStart(t, root, other, nil)

	if jobs.KillRequested(root, agent, j.ID) {
		t.Fatal("KillRequested before any request")
	}
	if err := jobs.RequestKill(root, agent, j.ID, "bob", nil); err != nil {
		t.Fatalf("RequestKill: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(root.Jobs(agent), j.ID+".kill"))
	if err != nil {
		t.Fatalf("no kill file: %v", err)
	}
	var req struct {
		By   string    `json:"by"`
		Time time.Time `json:"time"`
	}
	if err := json.Unmarshal(data, &req); err != nil || req.By != "bob" || req.Time.IsZero() {
		t.Errorf("kill file %s: by %q time %v err %v; want by bob with a time", data, req.By, req.Time, err)
	}
	if !jobs.KillRequested(root, agent, j.ID) {
		t.Error("KillRequested = false after RequestKill")
	}
	if jobs.KillRequested(root, agent, other.ID) {
		t.Error("another job is killed too")
	}
	if err := jobs.RequestKill(root, agent, j.ID, "bob", nil); err != nil {
		t.Errorf("second RequestKill = %v, want nil (asked already)", err)
	}
	if err := jobs.RequestKill(root, agent, j.ID, "carol", nil); !errors.Is(err, jobs.ErrKillPending) {
		t.Errorf("another requester's RequestKill = %v, want ErrKillPending", err)
	}
	if after, _ := os.ReadFile(filepath.Join(root.Jobs(agent), j.ID+".kill")); string(after) != string(data) {
		t.Errorf("second request replaced the first: %s, was %s", after, data)
	}
	if err := jobs.RequestKill(root, "claude", oldID("msg-20260310-120000-alice-0006"), "bob", nil); err == nil {
		t.Error("RequestKill for an agent with no jobs = nil, want an error")
	}
	noTemps(t, root.Jobs(agent))
}

// TestBadIDs: names that are not job ids are refused everywhere, so no id
// from outside reaches another file.
func TestBadIDs(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, id string }{
		{"empty", ""},
		{"parent", "../x"},
		{"slash", "job-a/b"},
		{"dot", "job-.x"},
		{"dots", "job-.."},
		{"prefix only", "job-"},
		{"no prefix", "msg-1"},
		{"NUL", "job-a\x00b"},
		{"too long", "job-" + strings.Repeat("a", 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := tree.Root(t.TempDir())
			mustStart(t, root, newJob("msg-20260310-120000-alice-0007"), nil)
			before := listAll(t, string(root))
			t.Run("read and kill", func(t *testing.T) {
				if _, err := jobs.Read(root, agent, tt.id); !errors.Is(err, tree.ErrBadName) {
					t.Errorf("Read = %v, want ErrBadName", err)
				}
				if _, err := jobs.Find(root, tt.id); !errors.Is(err, tree.ErrBadName) {
					t.Errorf("Find = %v, want ErrBadName", err)
				}
				if err := jobs.RequestKill(root, agent, tt.id, "bob", nil); !errors.Is(err, tree.ErrBadName) {
					t.Errorf("RequestKill = %v, want ErrBadName", err)
				}
				if err := jobs.SetStatus(root, agent, tt.id, jobs.Completed); !errors.Is(err, tree.ErrBadName) {
					t.Errorf("SetStatus = %v, want ErrBadName", err)
				}
				if after := listAll(t, string(root)); !slices.Equal(after, before) {
					t.Errorf("files changed:\nbefore %v\nafter  %v", before, after)
				}
			})
			// A record under a name List and Read refuse would never be
			// seen or pruned.
			t.Run("Start", func(t *testing.T) {
				j := newJob("x")
				j.ID = tt.id
				if _, err := jobs.Start(root, j, nil); err == nil {
					t.Errorf("Start = nil, want an error")
				}
				if after := listAll(t, string(root)); !slices.Equal(after, before) {
					t.Errorf("files changed:\nbefore %v\nafter  %v", before, after)
				}
			})
			t.Run("KillRequested", func(t *testing.T) {
				if strings.ContainsRune(tt.id, 0) {
					t.Skip("no file can have this name")
				}
				// A file where the bad id's kill file would be.
				p := filepath.Join(root.Jobs(agent), tt.id+".kill")
				if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o666); err != nil {
					t.Fatal(err)
				}
				if jobs.KillRequested(root, agent, tt.id) {
					t.Errorf("KillRequested = true, want false for a bad id (it found %s)", p)
				}
			})
		})
	}
	t.Run("bad agent", func(t *testing.T) {
		t.Parallel()
		root := tree.Root(t.TempDir())
		id := oldID("msg-20260310-120000-alice-0008")
		if _, err := jobs.Read(root, "../x", id); !errors.Is(err, tree.ErrBadName) {
			t.Errorf("Read = %v, want ErrBadName", err)
		}
		if err := jobs.RequestKill(root, "../x", id, "bob", nil); !errors.Is(err, tree.ErrBadName) {
			t.Errorf("RequestKill = %v, want ErrBadName", err)
		}
		if _, err := jobs.List(root, "a/b"); !errors.Is(err, tree.ErrBadName) {
			t.Errorf("List = %v, want ErrBadName", err)
		}
		j := newJob("msg-20260310-120000-alice-0008")
		j.Agent = ".."
		if _, err := jobs.Start(root, j, nil); !errors.Is(err, tree.ErrBadName) {
			t.Errorf("Start = %v, want ErrBadName", err)
		}
		if ents, _ := os.ReadDir(string(root)); len(ents) != 0 {
			t.Errorf("files written under a bad agent: %v", ents)
		}
	})
}

// listAll lists every path under dir.
func listAll(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	return out
}

// TestNilRecorder: a nil Recorder (the record could not be started)
// records nothing and never panics.
func TestNilRecorder(t *testing.T) {
	t.Parallel()
	var r *jobs.Recorder
	for _, tt := range []struct {
		name string
		call func()
	}{
		{"Event", func() { r.Event(modelcli.Event{Kind: modelcli.EventProgress}) }},
		{"Update", func() { r.Update(func(*jobs.Job) { t.Error("Update ran its function on a nil Recorder") }) }},
		{"Finish", func() {
			if j := r.Finish(jobs.Completed, modelcli.Response{}, errors.New("x")); j.ID != "" {
				t.Errorf("Finish = %+v, want zero", j)
			}
		}},
		{"Err", func() {
			if err := r.Err(); err != nil {
				t.Errorf("Err = %v", err)
			}
		}},
		{"Job", func() {
			if j := r.Job(); j.ID != "" {
				t.Errorf("Job = %+v, want zero", j)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s on a nil Recorder panicked: %v", tt.name, p)
				}
			}()
			tt.call()
		})
	}
}

// TestSetStatus: the job that asked a question is completed when the
// answer arrives; the rest of its record stays.
func TestSetStatus(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	j := newJob("msg-20260310-120000-alice-0009")
	r := mustStart(t, root, j, nil)
	r.Event(modelcli.Event{Kind: modelcli.EventNeedsInput, Text: "which one?"})
	q := &modelcli.Question{Text: "which one?", Options: []string{"a", "b"}}
	r.Finish(jobs.AwaitingInput, modelcli.Response{Session: "S1", CostUSD: 0.1, Question: q}, nil)
	if got := mustRead(t, root, agent, j.ID); got.Status != jobs.AwaitingInput || !got.Done() {
		t.Fatalf("status %q (done %v), want awaiting_input, not running", got.Status, got.Done())
	}

	if err := jobs.SetStatus(root, agent, j.ID, jobs.Completed); err != nil {
		t.Fatalf("SetStatus: %v", err)
	}
	got := mustRead(t, root, agent, j.ID)
	if got.Status != jobs.Completed {
		t.Errorf("status %q, want completed", got.Status)
	}
	if got.Session != "S1" || got.CostUSD != 0.1 || got.Question == nil || !slices.Equal(got.Question.Options, q.Options) || len(got.Events) != 1 {
		t.Errorf("SetStatus lost fields: %+v", got)
	}
	if err := jobs.SetStatus(root, agent, oldID("msg-20260310-120000-alice-0010"), jobs.Completed); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SetStatus of an unknown job = %v, want ErrNotExist", err)
	}
	noTemps(t, root.Jobs(agent))
}

// TestListAndFind: List is per agent, newest first, and leaves out what is
// not a readable record; Find looks through every agent.
func TestListAndFind(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	if _, err := jobs.Find(root, oldID("msg-20260310-120000-alice-0011")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Find in an empty tree = %v, want ErrNotExist", err)
	}
	clk := newClock()
	a1 := newJob("msg-20260310-120000-alice-0011")
	mustStart(t, root, a1, clk.Now)
	clk.Add(time.Minute)
	a2 := newJob("msg-20260310-120100-alice-0012")
	mustStart(t, root, a2, clk.Now).Finish(jobs.Failed, modelcli.Response{}, errors.New("boom"))
	clk.Add(time.Minute)
	b1 := newJob("msg-20260310-120200-alice-0013")
	b1.Agent = "claude"
	mustStart(t, root, b1, clk.Now)

	dir := root.Jobs(agent)
	for name, data := range map[string]string{
		"job-broken.json":    `{"id":`,
		"notes.txt":          "hello",
		".job-x.json.tmp":    "{}",
		"job-.hidden.json":   `{"id":"job-.hidden","agent":"codex","status":"running"}`,
		"msg-elsewhere.json": `{"id":"msg-elsewhere","agent":"codex","status":"running"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o666); err != nil {
			t.Fatal(err)
		}
	}

	list, err := jobs.List(root, agent)
	if got, want := jobIDs(list), []string{a2.ID, a1.ID}; err != nil || !slices.Equal(got, want) {
		t.Errorf("List(%s) = %v, %v; want %v", agent, got, err, want)
	}
	if list, err := jobs.List(root, "nobody"); err != nil || len(list) != 0 {
		t.Errorf("List of an agent with no jobs = %v, %v; want none, nil", list, err)
	}
	for _, want := range []jobs.Job{a1, a2, b1} {
		got, err := jobs.Find(root, want.ID)
		if err != nil || got.Agent != want.Agent {
			t.Errorf("Find(%s) = agent %q, %v; want %q", want.ID, got.Agent, err, want.Agent)
		}
	}
	if _, err := jobs.Find(root, oldID("msg-20260310-120000-alice-9999")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Find of an unknown job = %v, want ErrNotExist", err)
	}
	if _, err := jobs.Read(root, "claude", a1.ID); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of another agent's job = %v, want ErrNotExist", err)
	}
}

// TestConcurrentEvents: events arrive from the adapter's goroutine while
// the watcher updates the record; readers always see a whole record, and
// the final one has every event.
func TestConcurrentEvents(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	j := newJob("msg-20260310-120000-alice-0014")
	r := mustStart(t, root, j, nil)
	const writers, each = 4, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				kind := modelcli.EventProgress
				if i%5 == 0 {
					kind = modelcli.EventStarted // not coalesced: written at once
				}
				r.Event(modelcli.Event{Kind: kind, Text: fmt.Sprintf("%d/%d", w, i)})
			}
		})
	}
	wg.Go(func() {
		for i := range 10 {
			r.Update(func(j *jobs.Job) { j.Reply = fmt.Sprint(i) })
		}
	})
	stop := make(chan struct{})
	readerDone := make(chan error)
	go func() {
		var err error
		for {
			select {
			case <-stop:
				readerDone <- err
				return
			default:
			}
			if _, e := jobs.Read(root, agent, j.ID); e != nil && err == nil {
				err = e
			}
		}
	}()
	wg.Wait()
	r.Finish(jobs.Completed, modelcli.Response{}, nil)
	close(stop)
	if err := <-readerDone; err != nil {
		t.Errorf("a reader saw a partial record: %v", err)
	}
	got := mustRead(t, root, agent, j.ID)
	if len(got.Events) != writers*each {
		t.Errorf("final record has %d events, want %d", len(got.Events), writers*each)
	}
	if r.Err() != nil {
		t.Errorf("Err = %v", r.Err())
	}
	noTemps(t, root.Jobs(agent))
}

// TestPrepareHoldsWrites: a prepared record touches no file until Persist,
// which then writes everything recorded so far (and prunes); later changes
// are written as they happen.
func TestPrepareHoldsWrites(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	clk := newClock()
	msg := func(i int) string { return fmt.Sprintf("msg-20260310-120000-alice-%04d", i) }
	for i := range jobs.Keep + 3 {
		clk.Add(time.Second)
		mustStart(t, root, newJob(msg(i)), clk.Now).Finish(jobs.Completed, modelcli.Response{Text: "ok"}, nil)
	}
	clk.Add(time.Second)
	r, err := jobs.Prepare(root, newJob(msg(99)), clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	r.Event(modelcli.Event{Kind: modelcli.EventInputSent, Text: "the answer"})
	r.Update(func(j *jobs.Job) { j.Session = "S1" })
	if _, err := jobs.Read(root, agent, oldID(msg(99))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("before Persist, reading the record: %v, want not exist", err)
	}
	// Each Finish pruned: Keep finished records now, and Prepare wrote none.
	if list, _ := jobs.List(root, agent); len(list) != jobs.Keep {
		t.Fatalf("before Persist, %d records, want %d: nothing written yet", len(list), jobs.Keep)
	}
	if err := r.Persist(); err != nil {
		t.Fatal(err)
	}
	got := mustRead(t, root, agent, oldID(msg(99)))
	if got.Status != jobs.Running || got.Session != "S1" || len(got.Events) != 1 || got.Events[0].Kind != modelcli.EventInputSent {
		t.Errorf("after Persist: status %q session %q events %v, want running, S1 and the input event", got.Status, got.Session, got.Events)
	}
	list, _ := jobs.List(root, agent)
	if len(list) != jobs.Keep+1 || list[0].ID != oldID(msg(99)) || slices.ContainsFunc(list, func(j jobs.Job) bool { return j.ID == oldID(msg(2)) }) {
		t.Errorf("after Persist, records %v, want the new one and the %d newest finished", jobIDs(list), jobs.Keep)
	}
	if err := r.Persist(); err != nil {
		t.Errorf("second Persist: %v", err)
	}
	r.Finish(jobs.Completed, modelcli.Response{Text: "done"}, nil)
	if got := mustRead(t, root, agent, oldID(msg(99))); got.Status != jobs.Completed {
		t.Errorf("after Finish: status %q, want completed", got.Status)
	}
	var nilRec *jobs.Recorder
	if err := nilRec.Persist(); err != nil {
		t.Errorf("nil Recorder Persist: %v", err)
	}
}

// oldID is the id older watchers gave the job of a message: "job-" and
// the message id. Such records are still read, listed and found.
func oldID(msg string) string { return "job-" + msg }
