package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/watchsetup"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/workflow"
)

// TestMain makes the test binary, run under the name claude or gh, a
// stand-in for that CLI (fakeClaude, fakeGH); else it runs the tests.
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case "claude":
		os.Exit(fakeClaude(os.Args[1:], os.Stdin, os.Stdout))
	case "gh":
		os.Exit(fakeGH(os.Args[1:], os.Stdout))
	}
	os.Exit(m.Run())
}

// envFakeLog names the file where the stand-in claude appends a JSON
// line per run: its arguments and the prompt.
const envFakeLog = "COLLAB_SERVICE_FAKE_CLI_LOG"

// fakeRun is one run of the stand-in claude.
type fakeRun struct {
	Agent  string   `json:"agent"`
	Args   []string `json:"args"`
	Prompt string   `json:"prompt"`
}

// fakeClaude speaks Claude Code's print mode (stream-json: system/init,
// then the result): it answers any prompt with one line naming the agent,
// without an @mention, so a team's conversation ends with it.
func fakeClaude(args []string, stdin io.Reader, stdout io.Writer) int {
	prompt, _ := io.ReadAll(stdin)
	agent := os.Getenv("COLLAB_AGENT")
	if p := os.Getenv(envFakeLog); p != "" {
		line, _ := json.Marshal(fakeRun{Agent: agent, Args: args, Prompt: string(prompt)})
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		f.Write(append(line, '\n'))
		f.Close()
	}
	session := "8f2a3c1e-0000-4000-8000-000000000001"
	fmt.Fprintf(stdout, `{"type":"system","subtype":"init","session_id":%q,"model":"fake"}`+"\n", session)
	res, _ := json.Marshal(map[string]any{"type": "result", "subtype": "success", "is_error": false,
		"result": "Noted, from " + agent + ".", "session_id": session, "total_cost_usd": 0.001,
		"usage": map[string]int{"input_tokens": 10, "output_tokens": 3}})
	fmt.Fprintf(stdout, "%s\n", res)
	return 0
}

// fakeGH answers the seed's setup steps: gh pr diff, gh pr view.
func fakeGH(args []string, stdout io.Writer) int {
	switch strings.Join(args, " ") {
	case "pr diff":
		fmt.Fprint(stdout, "diff --git a/auth.go b/auth.go\n+FAKE-DIFF validate(token)\n")
	case "pr view --json title,body,files":
		fmt.Fprint(stdout, `{"title":"FAKE-PR","body":"b","files":[]}`+"\n")
	default:
		fmt.Fprintf(os.Stderr, "gh: unknown command %q\n", args)
		return 1
	}
	return 0
}

// withFakeCLIs puts the stand-in claude and gh first on PATH and returns
// the file the stand-in claude logs its runs in.
func withFakeCLIs(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, name := range []string{"claude", "gh"} {
		if err := os.Symlink(exe, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	log := filepath.Join(t.TempDir(), "runs.jsonl")
	t.Setenv(envFakeLog, log)
	return log
}

// fakeRuns reads the stand-in claude's log.
func fakeRuns(t *testing.T, log string) []fakeRun {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var runs []fakeRun
	for line := range bytes.SplitSeq(bytes.TrimSpace(data), []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		var r fakeRun
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	return runs
}

// syncBuffer is a bytes.Buffer safe for the team's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newTeamMount makes a tree (as collab init does) and the Mount on it.
func newTeamMount(t *testing.T) *Mount {
	t.Helper()
	m := newTestMount(t, filepath.Join(t.TempDir(), "tree"))
	if _, err := m.Init(context.Background(), InitRequest{}); err != nil {
		t.Fatal(err)
	}
	return m
}

// teamRequest is a team of file in instance, quick to start and stop.
func teamRequest(file, instance string, log io.Writer) TeamRequest {
	return TeamRequest{
		File: file, Instance: instance, From: Actor{Name: "human", Hops: -1}, Env: os.Getenv, Log: log,
		Watch:     watchsetup.Settings{Poll: 50 * time.Millisecond, Heartbeat: time.Second, Grace: time.Second},
		WatchHost: watchsetup.Host{Getenv: os.Getenv, Stderr: log},
	}
}

const seedDir = "testdata/seed000"

// TestSeedWorkflows: every workflow file of seed 000 (testdata/seed000,
// see its README) loads and runs to done, its agents run by the claude
// their model's provider names, with the model after the provider, and
// its context where the file puts it.
func TestSeedWorkflows(t *testing.T) {
	log := withFakeCLIs(t)
	tests := []struct {
		file    string
		agents  []string // those the kickoff wakes
		channel string
		check   func(t *testing.T, m *Mount, res *RunResult, rec workflow.Record)
	}{
		{file: "review.yaml", agents: []string{"reviewer", "coder"}, channel: "code-review--t1"},
		{file: "context-default.yaml", agents: []string{"reviewer", "coder"}, channel: "code-review--t1"},
		{file: "context-file.yaml", agents: []string{"reviewer", "coder"}, channel: "code-review--t1"},
		{file: "context-file-config.yaml", agents: []string{"reviewer", "coder"}, channel: "my-context-discussion"},
		{file: "context-memory.yaml", agents: []string{"reviewer", "coder"}, channel: "code-review--t1", check: checkMemory},
		{file: "context-false.yaml", agents: []string{"reviewer", "coder"}, channel: "code-review--t1", check: checkContextOff},
		{file: "documents.yaml", agents: []string{"reviewer", "coder"}, channel: "code-review--t1", check: checkDocuments},
		{file: "interpolation.yaml", agents: []string{"reviewer"}, channel: "code-review--t1"},
		{file: "simple-review.yaml", agents: []string{"reviewer"}, channel: "review--t1"},
		{file: "multi-agent.yaml", agents: []string{"coordinator", "reviewer", "coder"}, channel: "code-review--t1"},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".yaml"), func(t *testing.T) {
			if err := os.Truncate(log, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
			m := newTeamMount(t)
			var out syncBuffer
			res, err := m.RunWorkflow(context.Background(), RunRequest{TeamRequest: teamRequest(filepath.Join(seedDir, tt.file), "t1", &out),
				Timeout: time.Minute, Quiet: time.Second})
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			if res.Status != workflow.Done || res.Channel != tt.channel {
				t.Fatalf("result %+v, want done in %s", res, tt.channel)
			}
			for _, a := range res.Agents {
				want := slices.Contains(tt.agents, a.Name)
				if (a.Jobs > 0) != want || a.Failed > 0 {
					t.Errorf("agent %s ran %d jobs (%d failed), want some: %v", a.Name, a.Jobs, a.Failed, want)
				}
			}
			runs := fakeRuns(t, log)
			if len(runs) < len(tt.agents) {
				t.Fatalf("%d runs of claude, want %d", len(runs), len(tt.agents))
			}
			for _, r := range runs {
				if i := slices.Index(r.Args, "--model"); i < 0 || r.Args[i+1] != "claude-sonnet-4-5" {
					t.Errorf("%s: claude %q, want --model claude-sonnet-4-5", r.Agent, r.Args)
				}
				if !strings.Contains(r.Prompt, "FAKE-") {
					t.Errorf("%s: the prompt lacks the setup's output:\n%s", r.Agent, r.Prompt)
				}
			}
			rec, err := workflow.ReadRecord(m.Root(), res.Workflow, "t1")
			if err != nil || rec.Status != workflow.Done || rec.Channel != tt.channel {
				t.Fatalf("record %+v, %v", rec, err)
			}
			if tt.check != nil {
				tt.check(t, m, res, rec)
			}
		})
	}
}

// checkMemory: a memory instance kept its channel out of the tree, in a
// store named by its record and removed at the end.
func checkMemory(t *testing.T, m *Mount, res *RunResult, rec workflow.Record) {
	t.Helper()
	if rec.Store == "" || !filepath.IsAbs(rec.Store) {
		t.Fatalf("record's store %q", rec.Store)
	}
	if _, err := os.Stat(rec.Store); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the memory store %s is left: %v", rec.Store, err)
	}
	if _, err := os.Stat(m.Root().Channel(res.Channel)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a memory instance wrote its channel in the tree: %v", err)
	}
	if res.Last == nil || !strings.HasPrefix(res.Last.Content.Text, "Noted, from ") {
		t.Errorf("last message %+v", res.Last)
	}
}

// checkContextOff: with context: false no prompt shows the transcript
// and the result lists no documents.
func checkContextOff(t *testing.T, m *Mount, res *RunResult, rec workflow.Record) {
	t.Helper()
	if len(res.Documents) != 0 {
		t.Errorf("documents %q", res.Documents)
	}
	f, err := workflow.Load(filepath.Join(seedDir, "context-false.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range f.Agents {
		if s := agentSettings(watchsetup.Settings{}, a, a.Name+"--t1", res.Channel); s.Context >= 0 {
			t.Errorf("agent %s: watch context %d, want none (<0)", a.Name, s.Context)
		}
	}
}

// checkDocuments: the documents the file lists are made in the
// instance's documents folder.
func checkDocuments(t *testing.T, m *Mount, res *RunResult, rec workflow.Record) {
	t.Helper()
	for _, d := range []string{"goals.md", "todos.md", "methodology.md", "decisions.md"} {
		if _, err := os.Stat(filepath.Join(m.Root().Docs(res.Channel), d)); err != nil {
			t.Errorf("document %s: %v", d, err)
		}
	}
}

// TestStartWithoutKickoff: a file without a kickoff starts, posts
// nothing, and its agent answers the first message; run refuses it
// (Invalid), as it could not tell when the team is done.
func TestStartWithoutKickoff(t *testing.T) {
	log := withFakeCLIs(t)
	m := newTeamMount(t)
	file := filepath.Join(t.TempDir(), "wait.yaml")
	if err := os.WriteFile(file, []byte("agents:\n  reviewer:\n    model: anthropic/claude-sonnet-4-5\n    system_prompt: You review.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	_, err := m.RunWorkflow(context.Background(), RunRequest{TeamRequest: teamRequest(file, "r1", &out), Timeout: time.Minute, Quiet: time.Second})
	if errkind.Of(err) != errkind.Invalid || !strings.Contains(err.Error(), "use start") {
		t.Fatalf("run without a kickoff: %v (%v), want invalid", err, errkind.Of(err))
	}
	if _, err := workflow.ReadRecord(m.Root(), "wait", "r1"); err == nil {
		t.Error("a refused run left a record")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	running := make(chan Started, 1)
	type result struct {
		st  *Started
		err error
	}
	done := make(chan result, 1)
	req := StartRequest{TeamRequest: teamRequest(file, "s1", &out), Running: func(st Started) { running <- st }}
	go func() {
		st, err := m.StartWorkflow(ctx, req)
		done <- result{st, err}
	}()
	var st Started
	select {
	case st = <-running:
	case r := <-done:
		t.Fatalf("start ended: %+v, %v\n%s", r.st, r.err, out.String())
	case <-time.After(time.Minute):
		t.Fatal("not running after a minute")
	}
	if st.Kickoff != "" || st.Channel != "wait--s1" {
		t.Fatalf("started %+v, want no kickoff in wait--s1", st)
	}
	if _, err := m.Post(ctx, Actor{Name: "human", Hops: -1}, PostRequest{Channel: st.Channel, Text: "@reviewer hello"}); err != nil {
		t.Fatal(err)
	}
	r, err := channel.NewReader(m.Root(), st.Channel, channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var seen []channel.Message
	for deadline := time.Now().Add(time.Minute); ; {
		msgs, _, _ := r.Scan()
		seen = append(seen, msgs...)
		if slices.ContainsFunc(seen, func(m channel.Message) bool { return m.From == "reviewer--s1" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer from reviewer after a minute; channel %+v\n%s", seen, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if seen[0].Content.Text != "@reviewer hello" {
		t.Errorf("first message %q, want ours (no kickoff)", seen[0].Content.Text)
	}
	if runs := fakeRuns(t, log); len(runs) != 1 || !strings.Contains(runs[0].Prompt, "hello") {
		t.Errorf("claude runs %+v", runs)
	}
	cancel()
	if res := <-done; res.err != nil {
		t.Fatalf("start: %v", res.err)
	}
}

// TestTeamToolsAndWarnings: an agent's tools reach its CLI's arguments
// after its cli_args, and the file's warnings are printed before the
// team starts.
func TestTeamToolsAndWarnings(t *testing.T) {
	log := withFakeCLIs(t)
	m := newTeamMount(t)
	file := filepath.Join(t.TempDir(), "tools.yaml")
	src := "agents:\n  reviewer:\n    model: anthropic/claude-sonnet-4-5\n    cli_args: [--debug]\n    tools: [Read, Grep]\nkickoff: \"@reviewer look\"\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	res, err := m.RunWorkflow(context.Background(), RunRequest{TeamRequest: teamRequest(file, "w1", &out), Timeout: time.Minute, Quiet: time.Second})
	if err != nil || res.Status != workflow.Done {
		t.Fatalf("run: %+v, %v\n%s", res, err, out.String())
	}
	if !strings.Contains(out.String(), "collab: warning: "+file+":5:5: agent \"reviewer\": tools: --allowedTools only adds") {
		t.Errorf("no warning on the log:\n%s", out.String())
	}
	runs := fakeRuns(t, log)
	if len(runs) != 1 {
		t.Fatalf("runs %+v", runs)
	}
	args := runs[0].Args
	i := slices.Index(args, "--debug")
	j := slices.Index(args, "Read")
	if i < 0 || j != i+2 || args[i+1] != "--allowedTools" || args[j+1] != "Grep" || args[j+2] != "--disallowedTools" || !slices.Contains(args[j+2:], "Bash") || slices.Contains(args[j+2:], "Read") {
		t.Errorf("claude's arguments %q", args)
	}
}

// TestSweepStores: a memory store left by a process that is gone is
// removed once older than storeStale; a live process's, a fresh one and
// anything else named otherwise stay.
func TestSweepStores(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead, live := cmd.Process.Pid, os.Getpid()
	base := t.TempDir()
	now := time.Now()
	old := now.Add(-2 * storeStale)
	mk := func(name string, dir bool, mtime time.Time) string {
		p := filepath.Join(base, name)
		var err error
		if dir {
			err = os.MkdirAll(filepath.Join(p, "channels"), 0o700)
		} else {
			err = os.WriteFile(p, nil, 0o600)
		}
		if err == nil {
			err = os.Chtimes(p, mtime, mtime)
		}
		if err != nil {
			t.Fatal(err)
		}
		return name
	}
	gone := mk(fmt.Sprintf("collab-%d-wf--i1-123", dead), true, old)
	kept := []string{
		mk(fmt.Sprintf("collab-%d-wf--i2-123", live), true, old),
		mk(fmt.Sprintf("collab-%d-wf--i3-123", dead), true, now),
		mk(fmt.Sprintf("collab-%d-file", dead), false, old),
		mk("collab-x-wf--i4-1", true, old),
		mk("other-1-wf", true, old),
	}
	sweepStores(base, now)
	if _, err := os.Stat(filepath.Join(base, gone)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s stays: %v", gone, err)
	}
	for _, k := range kept {
		if _, err := os.Stat(filepath.Join(base, k)); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
}
