package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// jobsFixture is a tree with three job records:
//
//	done     codex, completed 10 min ago → 1 min ago, cost and tokens, 4 events
//	failed   codex, failed 20 min ago
//	running  claude on host-2, started 2 min ago
type jobsFixture struct {
	root                  tree.Root
	env                   map[string]string
	now                   time.Time
	done, failed, running jobs.Job
}

func newJobsFixture(t *testing.T) *jobsFixture {
	t.Helper()
	f := &jobsFixture{root: tree.Root(newTree(t)), now: time.Now().UTC()}
	f.env = map[string]string{"COLLAB_ROOT": string(f.root)}
	at := f.now
	clock := func() time.Time { return at }
	ago := func(d time.Duration) time.Time { return f.now.Add(-d) }
	record := func(agent, host, msg string, started time.Duration, run func(*jobs.Recorder)) jobs.Job {
		t.Helper()
		at = ago(started)
		r, err := jobs.Start(f.root, jobs.Job{
			ID: "job-" + msg, Agent: agent, Host: host, Channel: "general",
			Message: msg, From: "alice", CLI: "fake",
		}, clock)
		if err != nil {
			t.Fatal(err)
		}
		run(r)
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		j, err := jobs.Read(f.root, agent, "job-"+msg)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	f.failed = record("codex", "host-1", "msg-20260310-114000-alice-0001", 20*time.Minute, func(r *jobs.Recorder) {
		at = ago(19 * time.Minute)
		r.Finish(jobs.Failed, modelcli.Response{}, errors.New("exit status 1"))
	})
	f.done = record("codex", "host-1", "msg-20260310-115000-alice-0002", 10*time.Minute, func(r *jobs.Recorder) {
		r.Event(modelcli.Event{Time: ago(10 * time.Minute), Kind: modelcli.EventStarted, Text: "session S1"})
		r.Event(modelcli.Event{Time: ago(5 * time.Minute), Kind: modelcli.EventProgress, Text: "reading files"})
		r.Event(modelcli.Event{Time: ago(4 * time.Minute), Kind: modelcli.EventToolCall, Tool: "Bash", Text: "go test ./..."})
		r.Event(modelcli.Event{Time: ago(time.Minute), Kind: modelcli.EventCompleted, Text: "all good"})
		at = ago(time.Minute)
		r.Finish(jobs.Completed, modelcli.Response{Session: "S1", CostUSD: 0.0123, Usage: modelcli.Usage{Input: 1200, Output: 80}}, nil)
		r.Update(func(j *jobs.Job) { j.Reply = "msg-20260310-115900-codex-beef" })
	})
	f.running = record("claude", "host-2", "msg-20260310-115800-bob-0003", 2*time.Minute, func(r *jobs.Recorder) {
		r.Event(modelcli.Event{Time: ago(time.Minute), Kind: modelcli.EventProgress, Text: "thinking"})
	})
	return f
}

// jobRows returns the rows of a jobs table (the header left out) as
// fields; the STARTED column is two fields.
func jobRows(t *testing.T, out string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if h := strings.Fields(lines[0]); !slices.Equal(h, []string{"JOB", "AGENT", "STATUS", "STARTED", "TOOK", "CLI", "COST", "FROM", "CHANNEL"}) {
		t.Fatalf("header %q", lines[0])
	}
	var rows [][]string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 10 {
			t.Fatalf("row %q has %d fields, want 10", l, len(f))
		}
		rows = append(rows, f)
	}
	return rows
}

func TestJobsTable(t *testing.T) {
	f := newJobsFixture(t)
	tests := []struct {
		name string
		args []string
		want []jobs.Job // newest first
	}{
		{"every agent", nil, []jobs.Job{f.running, f.done, f.failed}},
		{"one agent", []string{"--agent", "codex"}, []jobs.Job{f.done, f.failed}},
		{"agent without jobs", []string{"--agent", "gemini"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCollab(t, f.env, "", append([]string{"jobs"}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			rows := jobRows(t, r.stdout)
			if len(rows) != len(tt.want) {
				t.Fatalf("%d rows, want %d:\n%s", len(rows), len(tt.want), r.stdout)
			}
			for i, j := range tt.want {
				row := rows[i]
				if row[0] != j.ID || row[1] != j.Agent || row[2] != j.Status || row[6] != "fake" || row[8] != "alice" || row[9] != "general" {
					t.Errorf("row %d = %v, want job %s of %s, %s", i, row, j.ID, j.Agent, j.Status)
				}
				if started := j.Started.Local().Format("2006-01-02 15:04:05"); row[3]+" "+row[4] != started {
					t.Errorf("row %d started %s %s, want %s", i, row[3], row[4], started)
				}
			}
		})
	}
	r := runCollab(t, f.env, "", "jobs")
	rows := jobRows(t, r.stdout)
	if done := rows[1]; done[5] != "9m0s" || done[7] != "$0.0123" {
		t.Errorf("completed job took %q cost %q, want 9m0s $0.0123", done[5], done[7])
	}
	if running := rows[0]; !strings.HasSuffix(running[5], "…") || running[7] != "-" {
		t.Errorf("running job took %q cost %q, want a running time with … and -", running[5], running[7])
	}
}

func TestJobsJSON(t *testing.T) {
	f := newJobsFixture(t)
	r := runCollab(t, f.env, "", "jobs", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var got []jobs.Job
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	var ids []string
	for _, j := range got {
		ids = append(ids, j.ID)
		if len(j.Events) != 0 {
			t.Errorf("%s: %d events in the list, want none (jobs show has them)", j.ID, len(j.Events))
		}
	}
	if want := []string{f.running.ID, f.done.ID, f.failed.ID}; !slices.Equal(ids, want) {
		t.Errorf("jobs %v, want %v", ids, want)
	}
	if d := got[1]; d.CostUSD != 0.0123 || d.Usage.Input != 1200 || d.Session != "S1" || d.Reply != f.done.Reply || d.Host != "host-1" {
		t.Errorf("completed job = %+v", d)
	}

	r = runCollab(t, f.env, "", "jobs", "--json", "--agent", "claude")
	got = nil
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 1 || got[0].ID != f.running.ID || got[0].Status != jobs.Running {
		t.Errorf("--agent claude --json = %s (%v), want the running job", r.stdout, err)
	}
}

// TestJobsEmpty: a tree with no jobs lists none; --json is an empty array
// (a script indexes it), not null.
func TestJobsEmpty(t *testing.T) {
	env := map[string]string{"COLLAB_ROOT": newTree(t)}
	r := runCollab(t, env, "", "jobs")
	if r.code != 0 || len(jobRows(t, r.stdout)) != 0 {
		t.Errorf("jobs in an empty tree: exit %d, output %q", r.code, r.stdout)
	}
	r = runCollab(t, env, "", "jobs", "--json")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("jobs --json in an empty tree: exit %d, output %q, want []", r.code, r.stdout)
	}
}

// eventLines returns the event lines of `jobs show` as kind → line.
func eventLines(out string) (kinds []string, lines map[string]string) {
	lines = map[string]string{}
	known := []string{modelcli.EventStarted, modelcli.EventProgress, modelcli.EventToolCall, modelcli.EventNeedsInput,
		modelcli.EventInputSent, modelcli.EventError, modelcli.EventCompleted}
	for l := range strings.Lines(out) {
		if f := strings.Fields(l); len(f) >= 2 && slices.Contains(known, f[1]) {
			kinds = append(kinds, f[1])
			lines[f[1]] = strings.TrimSpace(l)
		}
	}
	return kinds, lines
}

func TestJobsShow(t *testing.T) {
	f := newJobsFixture(t)
	r := runCollab(t, f.env, "", "jobs", "show", f.done.ID)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{
		"job " + f.done.ID + "  agent codex@host-1  completed  cli fake\n",
		"message " + f.done.Message + " from alice in general\n",
		"session S1 (resumed: false)\n",
		"cost $0.0123  tokens in 1200 out 80\n",
		"reply " + f.done.Reply + "\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	kinds, lines := eventLines(r.stdout)
	if want := []string{"started", "progress", "tool_call", "completed"}; !slices.Equal(kinds, want) {
		t.Errorf("events %v, want %v:\n%s", kinds, want, r.stdout)
	}
	if l := lines["tool_call"]; !strings.HasSuffix(l, "Bash go test ./...") {
		t.Errorf("tool call line %q, want the tool and its text", l)
	}
	if l, want := lines["progress"], f.done.Events[1].Time.Local().Format("15:04:05.000"); !strings.HasPrefix(l, want) {
		t.Errorf("progress line %q, want it to begin with its time %s", l, want)
	}

	r = runCollab(t, f.env, "", "jobs", "show", f.failed.ID)
	if kinds, lines := eventLines(r.stdout); r.code != 0 || !strings.Contains(r.stdout, "error exit status 1\n") ||
		!slices.Equal(kinds, []string{"error"}) || !strings.HasSuffix(lines["error"], "exit status 1") {
		t.Errorf("failed job: exit %d\n%s", r.code, r.stdout)
	}
}

// TestJobsShowSince: --since keeps the events at or after a time, given
// as a duration ago or in RFC 3339.
func TestJobsShowSince(t *testing.T) {
	f := newJobsFixture(t)
	tests := []struct {
		name  string
		since string
		want  []string
	}{
		{"duration", "3m", []string{"completed"}},
		{"longer duration", "6m", []string{"progress", "tool_call", "completed"}},
		{"zero", "0s", nil},
		{"RFC 3339", f.now.Add(-4*time.Minute - 30*time.Second).Format(time.RFC3339), []string{"tool_call", "completed"}},
		{"RFC 3339 with an offset", f.now.Add(-6 * time.Minute).In(time.FixedZone("X", 2*3600)).Format(time.RFC3339Nano), []string{"progress", "tool_call", "completed"}},
		{"exactly an event's time", f.done.Events[1].Time.Format(time.RFC3339Nano), []string{"progress", "tool_call", "completed"}},
		{"before everything", "2000-01-01T00:00:00Z", []string{"started", "progress", "tool_call", "completed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCollab(t, f.env, "", "jobs", "show", f.done.ID, "--since", tt.since)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if kinds, _ := eventLines(r.stdout); !slices.Equal(kinds, tt.want) {
				t.Errorf("events %v, want %v:\n%s", kinds, tt.want, r.stdout)
			}
			if !strings.Contains(r.stdout, "job "+f.done.ID) {
				t.Errorf("no header:\n%s", r.stdout)
			}

			r = runCollab(t, f.env, "", "jobs", "show", "--json", "--since", tt.since, f.done.ID)
			var j jobs.Job
			if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
				t.Fatalf("--json: %v\n%s", err, r.stdout)
			}
			var kinds []string
			for _, e := range j.Events {
				kinds = append(kinds, e.Kind)
			}
			if j.ID != f.done.ID || !slices.Equal(kinds, tt.want) {
				t.Errorf("--json: job %s events %v, want %v", j.ID, kinds, tt.want)
			}
		})
	}
}

func TestJobsKill(t *testing.T) {
	f := newJobsFixture(t)
	env := map[string]string{"COLLAB_ROOT": string(f.root), "COLLAB_AGENT": "alice"} // who asked for the job
	killFile := filepath.Join(f.root.State("claude"), "jobs", f.running.ID+".kill")

	r := runCollab(t, env, "", "jobs", "kill", f.running.ID)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if want := "asked claude's watcher on host-2 to stop " + f.running.ID + "\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	data, err := os.ReadFile(killFile)
	if err != nil {
		t.Fatalf("no kill file: %v", err)
	}
	var req struct {
		By string `json:"by"`
	}
	if err := json.Unmarshal(data, &req); err != nil || req.By != "alice" {
		t.Errorf("kill file %s: by %q (%v), want alice ($COLLAB_AGENT)", data, req.By, err)
	}
	if !jobs.KillRequested(f.root, "claude", f.running.ID) {
		t.Error("KillRequested = false after collab jobs kill")
	}
	if r := runCollab(t, env, "", "jobs", "kill", f.running.ID); r.code != 0 {
		t.Errorf("a second kill: exit %d, stderr %q; want 0", r.code, r.stderr)
	}

	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"completed job", []string{f.done.ID}, 1, f.done.ID + " is completed, not running"},
		{"failed job", []string{f.failed.ID}, 1, "is failed, not running"},
		{"unknown job", []string{"job-msg-20260310-120000-alice-ffff"}, 1, "job-msg-20260310-120000-alice-ffff"},
		{"bad id", []string{"../x"}, 2, "../x"},
		{"id with a slash", []string{"job-a/b"}, 2, "job-a/b"},
		{"no id", nil, 2, "give one job id"},
		{"two ids", []string{f.running.ID, f.done.ID}, 2, "give one job id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCollab(t, env, "", append([]string{"jobs", "kill"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d stderr %q, want %d and %q", r.code, r.stderr, tt.code, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
		})
	}
	for _, j := range []jobs.Job{f.done, f.failed} {
		if jobs.KillRequested(f.root, j.Agent, j.ID) {
			t.Errorf("a kill file was made for the finished job %s", j.ID)
		}
	}
}

func TestJobsBadInput(t *testing.T) {
	f := newJobsFixture(t)
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"show bad id", []string{"show", "../x"}, 2, "../x"},
		{"show dotted id", []string{"show", "job-.x"}, 2, "job-.x"},
		{"show empty id", []string{"show", ""}, 2, "job id"},
		{"show unknown id", []string{"show", "job-msg-20260310-120000-alice-ffff"}, 1, "job-msg-20260310-120000-alice-ffff"},
		{"show no id", []string{"show"}, 2, "give one job id"},
		{"show bad since", []string{"show", f.done.ID, "--since", "yesterday"}, 2, "yesterday"},
		{"show negative since", []string{"show", f.done.ID, "--since", "-5m"}, 2, "-5m"},
		{"list bad agent", []string{"--agent", "../x"}, 2, "../x"},
		{"list argument", []string{"everything"}, 2, "unexpected argument"},
		{"list bad flag", []string{"--nope"}, 2, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCollab(t, f.env, "", append([]string{"jobs"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d stderr %q, want %d and %q", r.code, r.stderr, tt.code, tt.want)
			}
		})
	}
	r := runCollab(t, f.env, "", "jobs", "--help")
	if r.code != 0 || !strings.Contains(r.stderr, "Usage: collab jobs") {
		t.Errorf("--help: exit %d stderr %q", r.code, r.stderr)
	}
}

// TestJobsKillNATS: with NATS configured, jobs kill writes the kill file
// and also publishes the request on the agent's kill subject; with the
// server unreachable it warns and the file still asks.
func TestJobsKillNATS(t *testing.T) {
	f := newJobsFixture(t)
	url := natsServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bus, err := natsbus.Connect(ctx, natsbus.Options{URL: url, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	got := make(chan string, 4)
	sub, err := bus.SubscribeKills("claude", func(job string) { got <- job })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()

	env := map[string]string{"COLLAB_ROOT": string(f.root), "COLLAB_AGENT": "alice", "NATS_URL": url}
	r := runCollab(t, env, "", "jobs", "kill", f.running.ID)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if !jobs.KillRequested(f.root, "claude", f.running.ID) {
		t.Error("no kill file: the file stays the request")
	}
	select {
	case id := <-got:
		if id != f.running.ID {
			t.Errorf("kill request over NATS for %q, want %q", id, f.running.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no kill request over NATS")
	}

	// Nobody listening on the port: a warning, and the file.
	g := newJobsFixture(t)
	env = map[string]string{"COLLAB_ROOT": string(g.root), "COLLAB_AGENT": "alice", "NATS_URL": "nats://127.0.0.1:1"}
	r = runCollab(t, env, "", "jobs", "kill", g.running.ID)
	if r.code != 0 || !strings.Contains(r.stderr, "warning") {
		t.Errorf("unreachable NATS: exit %d, stderr %q; want 0 and a warning", r.code, r.stderr)
	}
	if !jobs.KillRequested(g.root, "claude", g.running.ID) {
		t.Error("unreachable NATS: no kill file")
	}
}

// TestWatchKillOverNATS: a collab watch process with NATS, polling and
// beating once an hour, stops its CLI when collab jobs kill (with NATS)
// asks: the request over NATS makes it look at the kill file at once.
func TestWatchKillOverNATS(t *testing.T) {
	url := natsServer(t)
	root := newTree(t)
	started := t.TempDir()
	startWatcher(t, root, "codex", "dev", []string{"NATS_URL=" + url, "FAKE_CLI_STARTED=" + started, "FAKE_CLI_SLEEP=1h"},
		"--poll", "1h", "--heartbeat", "1h")
	id := send(t, root, "dev", "alice", "codex", "a long task")
	var job string
	waitFor(t, func() bool {
		job = jobOf(root, "codex", id)
		j, err := jobs.Read(tree.Root(root), "codex", job)
		ents, _ := os.ReadDir(started)
		return err == nil && j.Status == jobs.Running && len(ents) == 1
	})
	// Killed by its asker (jobs.MayKill).
	r := runCollab(t, map[string]string{"COLLAB_ROOT": root, "NATS_URL": url, "COLLAB_AGENT": "alice"}, "", "jobs", "kill", job)
	if r.code != 0 {
		t.Fatalf("jobs kill: exit %d, stderr %q", r.code, r.stderr)
	}
	waitFor(t, func() bool {
		j, err := jobs.Read(tree.Root(root), "codex", job)
		return err == nil && j.Status == jobs.Killed
	})
}

// jobOf returns the id of agent's newest job for message msg under root,
// or "job-" and msg (no record) while there is none.
func jobOf(root, agent, msg string) string {
	if j, err := jobs.Lookup(tree.Root(root), agent, msg); err == nil {
		return j.ID
	}
	return "job-" + msg
}
