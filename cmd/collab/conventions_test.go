package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/plumbing/envflag"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/task"
)

// The conventions every subcommand shares (flags.go): text from --text,
// words or standard input; the acting agent from --agent, $COLLAB_AGENT,
// then the login name; flag over variable over default.

// TestTextSources: send, doc write and doc append take their text as
// --text, as trailing words, or from standard input with "-", through one
// helper.
func TestTextSources(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		args  []string // after the command and its channel
	}{
		{"text flag", "", []string{"--text", "hello world"}},
		{"words", "", []string{"hello", "world"}},
		{"dash", "hello world\n", []string{"-"}},
		{"text flag dash", "hello world\n", []string{"--text", "-"}},
	}
	for _, tt := range tests {
		t.Run("send/"+tt.name, func(t *testing.T) {
			root := newTree(t)
			env := map[string]string{"COLLAB_ROOT": root, "COLLAB_AGENT": "ann"}
			r := runCollab(t, env, tt.stdin, append([]string{"send", "--channel", "dev"}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if got := onlyMessage(t, root, "dev").Content.Text; got != "hello world" {
				t.Errorf("text %q, want %q", got, "hello world")
			}
		})
		for _, action := range []string{"write", "append"} {
			t.Run("doc "+action+"/"+tt.name, func(t *testing.T) {
				root := newTree(t)
				env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev"}
				if r := runCollab(t, env, "", "doc", "create", "notes.md", "--text", "# Notes"); r.code != 0 {
					t.Fatalf("create: exit %d: %s", r.code, r.stderr)
				}
				// The words follow FILE; "-" alone stands for standard
				// input into notes.md.
				args := append([]string{"doc", action}, tt.args...)
				if tt.name == "words" {
					args = append([]string{"doc", action, "notes.md"}, tt.args...)
				}
				r := runCollab(t, env, tt.stdin, args...)
				if r.code != 0 {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
				want := map[string]string{"write": "hello world\n", "append": "# Notes\nhello world\n"}[action]
				if got := runCollab(t, env, "", "doc", "read").stdout; got != want {
					t.Errorf("notes.md = %q, want %q", got, want)
				}
			})
		}
	}
	// The file named, then the words or "-".
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev"}
	for _, step := range []struct {
		stdin string
		args  []string
	}{
		{"", []string{"doc", "create", "findings/auth.md", "weak", "hash"}},
		{"- from stdin\n", []string{"doc", "append", "findings/auth.md", "-"}},
		{"- piped, no dash\n", []string{"doc", "append", "findings/auth.md"}},
	} {
		if r := runCollab(t, env, step.stdin, step.args...); r.code != 0 {
			t.Fatalf("%q: exit %d: %s", step.args, r.code, r.stderr)
		}
	}
	if got, want := runCollab(t, env, "", "doc", "read", "findings/auth.md").stdout, "weak hash\n- from stdin\n- piped, no dash\n"; got != want {
		t.Errorf("findings/auth.md = %q, want %q", got, want)
	}
	for _, args := range [][]string{
		{"doc", "write", "notes.md", "--text", "x", "y"},
		{"send", "--agent", "a", "--text", "x", "y"},
	} {
		if r := runCollab(t, env, "", args...); r.code != exitUsage || !strings.Contains(r.stderr, "not both") {
			t.Errorf("%q: exit %d, %q; want a usage error: text given twice", args, r.code, r.stderr)
		}
	}
	big := strings.Repeat("x", 5<<20)
	if r := runCollab(t, env, big, "doc", "write", "-"); r.code != exitUsage || !strings.Contains(r.stderr, "document limit") {
		t.Errorf("oversized standard input: exit %d, %q", r.code, r.stderr)
	}
}

// identityCase is one command that acts as an agent: how to run it in a
// fresh tree, and which agent it acted as.
type identityCase struct {
	name string
	// setup prepares root so that the command can succeed as agent want,
	// and returns its arguments (without --agent).
	setup func(t *testing.T, root tree.Root, want string) []string
	// actedAs returns the agent the successful run acted as.
	actedAs func(t *testing.T, root tree.Root, r result) string
	noun    string // in the error when there is no agent
}

func identityCases() []identityCase {
	taskAs := func(sub string, claim bool) func(t *testing.T, root tree.Root, want string) []string {
		return func(t *testing.T, root tree.Root, want string) []string {
			env := map[string]string{"COLLAB_ROOT": string(root), "COLLAB_CHANNEL": "dev"}
			if r := runCollab(t, env, "", "task", "add", "--agent", "lead", "--title", "parser"); r.code != 0 {
				t.Fatalf("task add: %s", r.stderr)
			}
			if claim {
				if r := runCollab(t, env, "", "task", "claim", "t1", "--agent", want); r.code != 0 {
					t.Fatalf("task claim: %s", r.stderr)
				}
			}
			args := []string{"task", sub, "--channel", "dev", "--json"}
			switch sub {
			case "add":
				return append(args, "--title", "fuzz it")
			case "claim":
				return append(args, "t1")
			case "checkpoint":
				return append(args, "t1", "--summary", "lexer done")
			case "done":
				return append(args, "t1", "--outcome", "merged")
			case "fail":
				return append(args, "t1", "--error", "flaky")
			}
			return args
		}
	}
	taskBy := func(t *testing.T, root tree.Root, r result) string {
		var tk task.Task
		if err := json.Unmarshal([]byte(r.stdout), &tk); err != nil {
			t.Fatalf("task --json %q: %v", r.stdout, err)
		}
		if tk.Owner != "" {
			return tk.Owner
		}
		return tk.CreatedBy
	}
	taskLast := func(t *testing.T, root tree.Root, r result) string {
		// checkpoint, done and fail succeed only for the owner: the task
		// was claimed by the agent wanted, so the run acted as it.
		var tk task.Task
		if err := json.Unmarshal([]byte(r.stdout), &tk); err != nil {
			t.Fatalf("task --json %q: %v", r.stdout, err)
		}
		_, evs, err := mustBoard(t, root).Events(tk.ID)
		if err != nil || len(evs) == 0 {
			t.Fatalf("events of %s: %v, %v", tk.ID, evs, err)
		}
		return evs[len(evs)-1].Agent
	}
	cases := []identityCase{
		{
			name: "send",
			setup: func(t *testing.T, root tree.Root, want string) []string {
				return []string{"send", "--channel", "dev", "hello"}
			},
			actedAs: func(t *testing.T, root tree.Root, r result) string { return onlyMessage(t, string(root), "dev").From },
			noun:    "no sender",
		},
		{
			name: "inbox",
			setup: func(t *testing.T, root tree.Root, want string) []string {
				post(t, string(root), "dev", "lead", want, "for you", time.Now())
				return []string{"inbox", "--json"}
			},
			actedAs: func(t *testing.T, root tree.Root, r result) string {
				ids, _ := inboxIDs(t, r.stdout)
				if len(ids) != 1 {
					return "" // the message was not for the agent it acted as
				}
				return inboxOwner(t, root)
			},
			noun: "no agent",
		},
		{
			name: "inbox ack",
			setup: func(t *testing.T, root tree.Root, want string) []string {
				m := post(t, string(root), "dev", "lead", want, "for you", time.Now())
				return []string{"inbox", "ack", "--until", m.ID}
			},
			actedAs: func(t *testing.T, root tree.Root, r result) string { return inboxOwner(t, root) },
			noun:    "no agent",
		},
	}
	for _, sub := range []string{"add", "claim", "next"} {
		cases = append(cases, identityCase{name: "task " + sub, setup: taskAs(sub, false), actedAs: taskBy, noun: "no agent"})
	}
	for _, sub := range []string{"checkpoint", "done", "fail"} {
		cases = append(cases, identityCase{name: "task " + sub, setup: taskAs(sub, true), actedAs: taskLast, noun: "no agent"})
	}
	return cases
}

func mustBoard(t *testing.T, root tree.Root) *task.Board {
	t.Helper()
	b, err := task.New(root, "dev")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// inboxOwner returns the one agent with an inbox cursor in root.
func inboxOwner(t *testing.T, root tree.Root) string {
	t.Helper()
	ents, _ := os.ReadDir(root.States())
	var owners []string
	for _, e := range ents {
		if _, err := os.Stat(root.Inbox(e.Name())); err == nil {
			owners = append(owners, e.Name())
		}
	}
	if len(owners) != 1 {
		t.Fatalf("inbox cursors of %v; want one", owners)
	}
	return owners[0]
}

// TestAgentFallback: every command that acts as an agent takes --agent,
// then $COLLAB_AGENT, then the login name; with none it is a usage error,
// and a login name that is no agent name says so.
func TestAgentFallback(t *testing.T) {
	chain := []struct {
		name   string
		flag   string // --agent
		env    string // COLLAB_AGENT
		login  string
		want   string // "": a usage error
		stderr string // with this in it
	}{
		{"flag first", "ann", "bob", "carl", "ann", ""},
		{"then the variable", "", "bob", "carl", "bob", ""},
		{"then the login name", "", "", "carl", "carl", ""},
		{"none", "", "", "", "", "use --agent or set COLLAB_AGENT"},
		{"login name not an agent name", "", "", "carl.smith", "", "login name"},
	}
	for _, c := range identityCases() {
		for _, step := range chain {
			t.Run(c.name+"/"+step.name, func(t *testing.T) {
				root := tree.Root(newTree(t))
				want := step.want
				if want == "" {
					want = "dan" // set up for someone; the run must fail anyway
				}
				args := c.setup(t, root, want)
				if step.flag != "" {
					args = append(args, "--agent", step.flag)
				}
				env := map[string]string{"COLLAB_ROOT": string(root), "COLLAB_CHANNEL": "dev", "COLLAB_AGENT": step.env}
				r := runCollabAs(t, step.login, env, "", args...)
				if step.want == "" {
					if r.code != exitUsage || !strings.Contains(r.stderr, step.stderr) {
						t.Fatalf("%q: exit %d, stderr %q; want %d and %q", args, r.code, r.stderr, exitUsage, step.stderr)
					}
					if step.name == "none" && !strings.Contains(r.stderr, c.noun) {
						t.Errorf("stderr %q does not say %q", r.stderr, c.noun)
					}
					return
				}
				if r.code != 0 {
					t.Fatalf("%q: exit %d, stderr %q", args, r.code, r.stderr)
				}
				if got := c.actedAs(t, root, r); got != step.want {
					t.Errorf("acted as %q, want %q", got, step.want)
				}
			})
		}
	}
}

// TestJobsKillBy: the kill request names who asked by the same chain, and
// "someone" when nothing names anyone.
func TestJobsKillBy(t *testing.T) {
	for _, tt := range []struct {
		name, flag, env, login, want string
	}{
		{"flag", "ann", "bob", "carl", "ann"},
		{"variable", "", "bob", "carl", "bob"},
		{"login name", "", "", "carl", "carl"},
		{"nobody", "", "", "", "someone"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newJobsFixture(t)
			// A running job that tt.want asked for: the one name that may kill it.
			rec, err := jobs.Start(f.root, jobs.Job{ID: jobs.NewID(), Agent: "claude", Host: "host-2", Channel: "general",
				Message: "msg-20260310-115800-ann-0004", From: tt.want, CLI: "fake"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			f.running = rec.Job()
			args := []string{"jobs", "kill", f.running.ID, "--json"}
			if tt.flag != "" {
				args = append(args, "--agent", tt.flag)
			}
			r := runCollabAs(t, tt.login, map[string]string{"COLLAB_ROOT": string(f.root), "COLLAB_AGENT": tt.env}, "", args...)
			var out map[string]string
			if err := json.Unmarshal([]byte(r.stdout), &out); r.code != 0 || err != nil {
				t.Fatalf("exit %d, stdout %q (%v), stderr %q", r.code, r.stdout, err, r.stderr)
			}
			data, _ := os.ReadFile(filepath.Join(f.root.Jobs("claude"), f.running.ID+".kill"))
			var req struct{ By string }
			json.Unmarshal(data, &req)
			if out["by"] != tt.want || req.By != tt.want || out["job"] != f.running.ID || out["agent"] != "claude" {
				t.Errorf("printed %v, kill file by %q; want by %q", out, req.By, tt.want)
			}
		})
	}
}

// TestDaemonsTakeNoLoginName: watch and mcp serve a named agent; a login
// name alone is a usage error that says why.
func TestDaemonsTakeNoLoginName(t *testing.T) {
	for _, args := range [][]string{
		{"watch", "--channel", "dev", "--cmd", "true"},
		{"mcp", "--channel", "dev"},
	} {
		root := newTree(t)
		r := runCollabAs(t, "carl", map[string]string{"COLLAB_ROOT": root}, "", args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "COLLAB_AGENT") {
			t.Errorf("%q as carl: exit %d, stderr %q; want a usage error", args, r.code, r.stderr)
		}
		if files := filesUnder(t, root); len(files) > 0 {
			t.Errorf("%q: created %v", args, files)
		}
	}
}

// TestParseEnv: flag, then the first variable set, then the default; a bad
// value in a variable is a usage error that names it; an alias counts as
// the flag; a list variable is comma-separated.
func TestParseEnv(t *testing.T) {
	type got struct {
		ch, src string
		n       int
		list    []string
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    got
		wantErr string
	}{
		{"default", nil, nil, got{"", "--channel", 3, nil}, ""},
		{"variable", nil, map[string]string{"COLLAB_CHANNEL": "dev", "N": "5"}, got{"dev", "COLLAB_CHANNEL", 5, nil}, ""},
		{"second variable", nil, map[string]string{"COLLAB_SESSION": "old"}, got{"old", "COLLAB_SESSION", 3, nil}, ""},
		{"first variable wins", nil, map[string]string{"COLLAB_CHANNEL": "new", "COLLAB_SESSION": "old"}, got{"new", "COLLAB_CHANNEL", 3, nil}, ""},
		{"flag over variable", []string{"--channel", "cli", "--n", "1"}, map[string]string{"COLLAB_CHANNEL": "dev", "N": "5"}, got{"cli", "--channel", 1, nil}, ""},
		{"alias over variable", []string{"--session", "cli"}, map[string]string{"COLLAB_CHANNEL": "dev"}, got{"cli", "--channel", 3, nil}, ""},
		{"shorthand", []string{"-s", "cli"}, nil, got{"cli", "--channel", 3, nil}, ""},
		{"list", nil, map[string]string{"LIST": "a,b"}, got{"", "--channel", 3, []string{"a", "b"}}, ""},
		{"bad variable", nil, map[string]string{"N": "many"}, got{}, `N="many"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFlags("test", new(strings.Builder))
			ch := channelFlag(fs, "channel")
			n := fs.Int("n", 3, "a number")
			envflag.FromEnv(fs, "n", "N")
			list := fs.StringArray("list", nil, "a list")
			envflag.FromEnv(fs, "list", "LIST")
			err := parse(fs, tt.args, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if exitCode(err, new(strings.Builder)) != exitUsage || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v; want a usage error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := got{*ch, envflag.Source(fs, "channel"), *n, *list}
			if g.ch != tt.want.ch || g.src != tt.want.src || g.n != tt.want.n || strings.Join(g.list, ",") != strings.Join(tt.want.list, ",") {
				t.Errorf("got %+v, want %+v", g, tt.want)
			}
		})
	}
	// The help names the variables.
	fs := newFlags("test", new(strings.Builder))
	channelFlag(fs, "channel")
	if u := fs.Lookup("channel").Usage; !strings.Contains(u, "env COLLAB_CHANNEL, then COLLAB_SESSION") || !strings.Contains(u, "also --session") {
		t.Errorf("usage %q does not name the variables and the alias", u)
	}
}

// TestHelpNamesVariables: in every command's help, a flag that falls back
// to a variable says which.
func TestHelpNamesVariables(t *testing.T) {
	for _, args := range [][]string{
		{"send"}, {"read"}, {"who"}, {"watch"}, {"jobs"}, {"jobs", "show"}, {"jobs", "kill"}, {"archive"},
		{"wait"}, {"task", "add"}, {"task", "list"}, {"inbox"}, {"inbox", "ack"}, {"doc"}, {"mcp"}, {"nats", "init"}, {"init"},
		{"key", "trust"}, {"key", "revoke"}, {"key", "list"}, {"verify"},
	} {
		r := runCollab(t, nil, "", append(args, "--help")...)
		help := r.stdout + r.stderr
		if r.code != 0 || !strings.Contains(help, "--root string") || !strings.Contains(help, "(env COLLAB_ROOT)") {
			t.Errorf("%q --help: exit %d, no --root (env COLLAB_ROOT) in\n%s", args, r.code, help)
		}
		for _, l := range strings.Split(help, "\n") {
			for _, f := range []string{"--channel string ", "--agent string ", "--nats string "} {
				filter := args[0] == "jobs" && (len(args) == 1 || args[1] == "show") // jobs [show] --agent filters the jobs
				if strings.Contains(l, f) && !strings.Contains(l, "(env ") && !filter {
					t.Errorf("%q --help: %q names no variable", args, l)
				}
			}
		}
	}
}

// TestExitCodes: one meaning per code across commands: 1 failure, 2 usage,
// 3 nothing there or nothing in time, 4 refused.
func TestExitCodes(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev"}
	id := strings.TrimSpace(runCollab(t, env, "", "send", "--agent", "ann", "hello").stdout)
	setup := [][]string{
		{"task", "add", "--agent", "lead", "--title", "parser"},
		{"task", "claim", "t1", "--agent", "codex"},
		{"doc", "create", "notes.md", "--text", "v1"},
	}
	for _, args := range setup {
		if r := runCollab(t, env, "", args...); r.code != 0 {
			t.Fatalf("%q: exit %d: %s", args, r.code, r.stderr)
		}
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
	}{
		{"ok", []string{"read"}, 0},
		{"failure: not in the channel", []string{"doc", "read", "missing.md"}, exitFailure},
		{"failure: not awake", []string{"who", "--check", "ann"}, exitFailure},
		{"usage: unknown flag", []string{"read", "--nope"}, exitUsage},
		{"usage: no sender", []string{"send", "hi"}, exitUsage},
		{"nothing: no reply in time", []string{"wait", "--reply-to", id, "--timeout", "10ms", "--poll", "5ms"}, exitNothing},
		{"nothing: no ready task", []string{"task", "next", "--agent", "gemini"}, exitNothing},
		{"refused: claimed by another", []string{"task", "claim", "t1", "--agent", "gemini"}, exitRefused},
		{"refused: changed since read", []string{"doc", "write", "--if-version", "sha256:00", "--text", "v2"}, exitRefused},
		{"refused: exists", []string{"doc", "create", "notes.md", "--text", "v2"}, exitRefused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if r := runCollab(t, env, "", tt.args...); r.code != tt.code {
				t.Errorf("%q: exit %d, want %d (stderr %q)", tt.args, r.code, tt.code, r.stderr)
			}
		})
	}
}

// TestTaskTextWords: the task board takes its text as trailing words too:
// add's title, and the summary, outcome or error after the task's id.
func TestTaskTextWords(t *testing.T) {
	root := newTree(t)
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev", "COLLAB_AGENT": "ann"}
	steps := []struct {
		args []string
		code int
	}{
		{[]string{"task", "add", "write", "the", "docs"}, 0},
		{[]string{"task", "add", "--title", "x", "y"}, exitUsage}, // title twice
		{[]string{"task", "claim", "t1", "extra"}, exitUsage},     // claim takes no text
		{[]string{"task", "claim", "t1"}, 0},
		{[]string{"task", "checkpoint", "t1", "half", "done"}, 0},
		{[]string{"task", "done", "t1", "--outcome", "x", "y"}, exitUsage}, // outcome twice
		{[]string{"task", "done", "t1", "all", "written"}, 0},
	}
	for _, s := range steps {
		if r := runCollab(t, env, "", s.args...); r.code != s.code {
			t.Fatalf("%q: exit %d (%s), want %d", s.args, r.code, r.stderr, s.code)
		}
	}
	got, err := mustBoard(t, tree.Root(root)).Get("t1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "write the docs" {
		t.Errorf("title %q, want %q", got.Title, "write the docs")
	}
	out := runCollab(t, env, "", "task", "show", "t1").stdout
	for _, want := range []string{"half done", "all written"} {
		if !strings.Contains(out, want) {
			t.Errorf("task show lacks %q:\n%s", want, out)
		}
	}
}
