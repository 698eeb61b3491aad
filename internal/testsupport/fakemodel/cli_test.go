package fakemodel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

var record = flag.Bool("record", false, "rewrite the fixtures in modelcli/testdata from the real CLIs (TestRecord)")

// fixtureDir is where TestRecord writes.
const fixtureDir = "../../modelcli/testdata"

// runTimeout bounds one CLI run; a healthy one takes 0.5 to 3 seconds.
const runTimeout = 60 * time.Second

// A scenario is one run of a real CLI against a fresh Server, checked,
// and with -record kept as a fixture.
type scenario struct {
	cli   string
	name  string // subtest name; the fixture is cli-name+ext
	ext   string // ".json", ".jsonl", ".txt"; "" for no fixture
	about string // what the run shows, for the fixture's meta file
	// prepare queues replies, writes files or runs an earlier turn, and
	// returns the arguments of the run.
	prepare func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string
	// kill, when set, cancels the run this long after its first model
	// call arrived.
	kill  time.Duration
	check func(t *testing.T, r run)
}

// run is the outcome of a scenario.
type run struct {
	srv    *fakemodel.Server
	cli    *fakemodel.CLI
	args   []string // after c.Argv
	res    proc.Result
	err    error
	stdout string
	stderr string
	// stopTook is how long the CLI took to end after a kill scenario
	// cancelled it.
	stopTook time.Duration
}

// TestCLI runs every scenario against the real CLIs and checks the
// outcome; CLIs not installed are skipped.
func TestCLI(t *testing.T) {
	if *record {
		t.Skip("-record: TestRecord runs the scenarios")
	}
	runScenarios(t, false)
}

// TestRecord runs the scenarios and writes their fixtures; it needs -record.
func TestRecord(t *testing.T) {
	if !*record {
		t.Skip("run with -record to rewrite " + fixtureDir)
	}
	runScenarios(t, true)
}

func runScenarios(t *testing.T, write bool) {
	for _, name := range []string{fakemodel.ClaudeCode, fakemodel.CodexCLI, fakemodel.GeminiCLI} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fakemodel.RequireCLI(t, name)
			version := ""
			if write {
				version = cliVersion(t, name)
			}
			for _, sc := range scenarios {
				if sc.cli != name {
					continue
				}
				t.Run(sc.name, func(t *testing.T) {
					t.Parallel()
					r := sc.run(t)
					sc.check(t, r)
					if write && sc.ext != "" && !t.Failed() {
						writeFixture(t, sc, r, version)
					}
				})
			}
		})
	}
}

func (sc scenario) run(t *testing.T) run {
	t.Helper()
	s := fakemodel.Start(t)
	c := s.CLI(t, sc.cli)
	args := sc.prepare(t, s, c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := make(chan time.Time, 1)
	if sc.kill > 0 {
		go func() {
			if _, err := s.WaitRequests(ctx, 1); err == nil {
				select {
				case <-time.After(sc.kill):
				case <-ctx.Done():
				}
			}
			cancelled <- time.Now()
			cancel()
		}()
	}
	res, err := c.Run(ctx, runTimeout, args...)
	var stopTook time.Duration
	select {
	case at := <-cancelled:
		stopTook = time.Since(at)
	default:
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s %q: %v\nstdout:\n%s\nstderr:\n%s", sc.cli, args, err, res.Stdout, res.StderrTail)
			for _, r := range s.AllRequests() {
				t.Logf("request %d: %s %s %s turn=%v model=%s prompt=%q", r.Seq, r.API, r.Method, r.Path, r.Turn, r.Model, r.Prompt())
			}
		}
	})
	return run{srv: s, cli: c, args: args, res: res, err: err, stdout: string(res.Stdout), stderr: string(res.StderrTail), stopTook: stopTook}
}

// first runs an earlier turn and fails the test unless it succeeds.
func first(t *testing.T, c *fakemodel.CLI, args ...string) string {
	t.Helper()
	res, err := c.Run(context.Background(), runTimeout, args...)
	if err != nil {
		t.Fatalf("first turn %q: %v\n%s\n%s", args, err, res.Stdout, res.StderrTail)
	}
	return string(res.Stdout)
}

// Prompts and replies the scenarios use.
const (
	hello      = "Say hello.\nThe second line is not echoed."
	helloReply = "echo: Say hello."
	remember   = "Remember the word apple."
	recall     = "Which word did I ask you to remember?"
	toolOutput = "tool-output-42"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

var scenarios = []scenario{
	// Claude Code.
	{
		cli: fakemodel.ClaudeCode, name: "text", ext: ".txt",
		about: "claude -p: the reply as plain text",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			return []string{"-p", hello}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			if got := strings.TrimSpace(r.stdout); got != helloReply {
				t.Errorf("stdout %q, want %q", got, helloReply)
			}
			reqs := r.srv.Requests()
			if len(reqs) != 1 || reqs[0].API != fakemodel.Anthropic || reqs[0].Model != fakemodel.ClaudeModel {
				t.Errorf("requests %+v, want one Anthropic call of %s", summary(reqs), fakemodel.ClaudeModel)
			}
		},
	},
	{
		cli: fakemodel.ClaudeCode, name: "json", ext: ".json",
		about: "claude -p --output-format json: one result object",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			return []string{"-p", "--output-format", "json", hello}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			res := lastOfType(t, r.stdout, "result")
			wantField(t, res, "subtype", "success")
			wantField(t, res, "is_error", false)
			wantField(t, res, "result", helloReply)
			if id, _ := res["session_id"].(string); !uuidRE.MatchString(id) {
				t.Errorf("session_id %q is not a UUID", id)
			}
		},
	},
	{
		cli: fakemodel.ClaudeCode, name: "stream", ext: ".jsonl",
		about: "claude -p --output-format stream-json --verbose: system/init, assistant, result lines",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			return []string{"-p", "--output-format", "stream-json", "--verbose", hello}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			lines := jsonLines(t, r.stdout)
			wantField(t, lines[0], "type", "system")
			wantField(t, lines[0], "subtype", "init")
			wantField(t, lastOfType(t, r.stdout, "result"), "result", helloReply)
			if got := assistantText(lastOfType(t, r.stdout, "assistant")); got != helloReply {
				t.Errorf("assistant text %q, want %q", got, helloReply)
			}
		},
	},
	{
		cli: fakemodel.ClaudeCode, name: "resume-stream", ext: ".jsonl",
		about: "claude -p --resume SESSION (second turn, stream-json): the earlier turn is sent again",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			out := first(t, c, "-p", "--output-format", "json", remember)
			id, _ := lastOfType(t, out, "result")["session_id"].(string)
			return []string{"-p", "--output-format", "stream-json", "--verbose", "--resume", id, recall}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			res := lastOfType(t, r.stdout, "result")
			wantField(t, res, "result", "echo: "+recall)
			wantSameSession(t, r, res["session_id"])
			wantResumed(t, r.srv)
		},
	},
	{
		cli: fakemodel.ClaudeCode, name: "tool-stream", ext: ".jsonl",
		about: "claude stream-json with a Bash tool call (echo is allowed without asking) and its result",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			s.Next(fakemodel.Shell("echo " + toolOutput))
			return []string{"-p", "--output-format", "stream-json", "--verbose", "Run the tool."}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			wantField(t, lastOfType(t, r.stdout, "result"), "result", "tool said: "+toolOutput)
			wantToolRound(t, r.srv, "Bash", toolOutput)
		},
	},
	{
		cli: fakemodel.ClaudeCode, name: "tool-denied-stream", ext: ".jsonl",
		about: "claude stream-json, default permission mode: a Write call is denied (no one to ask in -p), listed in permission_denials",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			s.Next(fakemodel.Tool("Write", map[string]any{"file_path": filepath.Join(c.Dir, "denied.txt"), "content": "no\n"}))
			return []string{"-p", "--output-format", "stream-json", "--verbose", "Create a file."}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			res := lastOfType(t, r.stdout, "result")
			if d, _ := res["permission_denials"].([]any); len(d) != 1 {
				t.Errorf("permission_denials %v, want one", res["permission_denials"])
			}
			if _, err := os.Stat(filepath.Join(r.cli.Dir, "denied.txt")); err == nil {
				t.Error("denied.txt was created")
			}
			reqs := r.srv.Requests()
			if res, ok := reqs[len(reqs)-1].ToolResult(); !ok || !res.IsError {
				t.Errorf("last request's tool result %+v, want an error", res)
			}
		},
	},
	{
		cli: fakemodel.ClaudeCode, name: "partial-stream", ext: ".jsonl",
		about: "claude stream-json --include-partial-messages: stream_event lines (the API's SSE events) before each assistant line",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			return []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", hello}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			lastOfType(t, r.stdout, "stream_event")
			wantField(t, lastOfType(t, r.stdout, "result"), "result", helloReply)
		},
	},
	{
		cli: fakemodel.ClaudeCode, name: "max-turns", ext: ".json",
		about: "claude -p --max-turns 1 when the model calls a tool: subtype error_max_turns",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			s.Always(fakemodel.Shell("echo again"))
			return []string{"-p", "--output-format", "json", "--max-turns", "1", "Loop."}
		},
		check: func(t *testing.T, r run) {
			res := lastOfType(t, r.stdout, "result")
			wantField(t, res, "subtype", "error_max_turns")
		},
	},
	{
		cli: fakemodel.ClaudeCode, name: "error", ext: ".json",
		about: "claude -p --output-format json when the API answers 500: exit 1, is_error true",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			s.Always(fakemodel.Error(500, "fake overload"))
			return []string{"-p", "--output-format", "json", hello}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 1)
			res := lastOfType(t, r.stdout, "result")
			wantField(t, res, "is_error", true)
			wantField(t, res, "api_error_status", 500.0)
			if msg, _ := res["result"].(string); !strings.Contains(msg, "fake overload") {
				t.Errorf("result %q does not carry the API's message", msg)
			}
			if n := len(r.srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1 (no retries)", n)
			}
		},
	},
	{
		cli: fakemodel.ClaudeCode, name: "error-stream", ext: ".jsonl",
		about: "claude stream-json when the API answers 400: exit 1, the result line has is_error true",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			s.Always(fakemodel.Error(400, "fake bad request"))
			return []string{"-p", "--output-format", "stream-json", "--verbose", hello}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 1)
			res := lastOfType(t, r.stdout, "result")
			wantField(t, res, "is_error", true)
			wantField(t, res, "api_error_status", 400.0)
		},
	},
	{
		cli: fakemodel.ClaudeCode, name: "resume-missing", ext: ".json",
		about: "claude -p --resume with an unknown session id: exit 1, nothing on stdout, the reason on stderr",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			return []string{"-p", "--output-format", "json", "--resume", "00000000-0000-4000-8000-000000000000", hello}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 1)
			wantStderr(t, r, "No conversation found with session ID")
			if n := len(r.srv.Requests()); n != 0 {
				t.Errorf("%d model calls, want 0", n)
			}
		},
	},
	{
		cli: fakemodel.ClaudeCode, name: "hung",
		prepare: hungPrepare("-p", "--output-format", "stream-json", "--verbose", hello),
		kill:    time.Second,
		check:   wantKilled,
	},

	// Codex CLI.
	{
		cli: fakemodel.CodexCLI, name: "text", ext: ".txt",
		about: "codex exec without --json: the last agent message on stdout, the session log on stderr",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			return []string{"exec", "--skip-git-repo-check", hello}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			if got := strings.TrimSpace(r.stdout); got != helloReply {
				t.Errorf("stdout %q, want %q", got, helloReply)
			}
		},
	},
	{
		cli: fakemodel.CodexCLI, name: "exec", ext: ".jsonl",
		about: "codex exec --json: thread.started, turn.started, item.completed (agent_message), turn.completed",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			return []string{"exec", "--json", "--skip-git-repo-check", hello}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			lines := jsonLines(t, r.stdout)
			wantField(t, lines[0], "type", "thread.started")
			if got := agentMessage(lastOfType(t, r.stdout, "item.completed")); got != helloReply {
				t.Errorf("agent_message %q, want %q", got, helloReply)
			}
			lastOfType(t, r.stdout, "turn.completed")
			reqs := r.srv.Requests()
			if len(reqs) != 1 || reqs[0].API != fakemodel.OpenAI || reqs[0].Model != fakemodel.CodexModel {
				t.Errorf("requests %+v, want one OpenAI call of %s", summary(reqs), fakemodel.CodexModel)
			}
		},
	},
	{
		cli: fakemodel.CodexCLI, name: "resume", ext: ".jsonl",
		about: "codex exec --json resume THREAD_ID PROMPT: the same thread_id, the earlier turn sent again",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			out := first(t, c, "exec", "--json", "--skip-git-repo-check", remember)
			id, _ := jsonLines(t, out)[0]["thread_id"].(string)
			return []string{"exec", "--json", "--skip-git-repo-check", "resume", id, recall}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			if got := agentMessage(lastOfType(t, r.stdout, "item.completed")); got != "echo: "+recall {
				t.Errorf("agent_message %q", got)
			}
			wantSameSession(t, r, lastOfType(t, r.stdout, "thread.started")["thread_id"])
			wantResumed(t, r.srv)
		},
	},
	{
		cli: fakemodel.CodexCLI, name: "tool", ext: ".jsonl",
		about: "codex exec --json with an exec_command tool call: item.started/item.completed command_execution, then the agent_message",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			s.Next(fakemodel.Shell("echo " + toolOutput))
			return []string{"exec", "--json", "--skip-git-repo-check", "Run the tool."}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			if got := agentMessage(lastOfType(t, r.stdout, "item.completed")); got != "tool said: "+toolOutput {
				t.Errorf("agent_message %q", got)
			}
			if !strings.Contains(r.stdout, `"type":"command_execution"`) {
				t.Error("no command_execution item")
			}
			wantToolRound(t, r.srv, "exec_command", toolOutput)
		},
	},
	{
		cli: fakemodel.CodexCLI, name: "tool-denied", ext: ".jsonl",
		about: "codex exec --json, read-only sandbox (exec's default): a command that writes fails inside the sandbox; no command_execution item is printed, only the agent_message",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			s.Next(fakemodel.Shell("touch denied.txt"))
			return []string{"exec", "--json", "--skip-git-repo-check", "Create a file."}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			if _, err := os.Stat(filepath.Join(r.cli.Dir, "denied.txt")); err == nil {
				t.Error("denied.txt was created")
			}
		},
	},
	{
		cli: fakemodel.CodexCLI, name: "error", ext: ".jsonl",
		about: "codex exec --json when the API answers 500: error and turn.failed lines, exit 1",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			s.Always(fakemodel.Error(500, "fake overload"))
			return []string{"exec", "--json", "--skip-git-repo-check", hello}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 1)
			lastOfType(t, r.stdout, "turn.failed")
			if n := len(r.srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1 (no retries)", n)
			}
		},
	},
	{
		cli: fakemodel.CodexCLI, name: "error-400", ext: ".jsonl",
		about: "codex exec --json when the API answers 400: the error body in the message, exit 1",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			s.Always(fakemodel.Error(400, "fake bad request"))
			return []string{"exec", "--json", "--skip-git-repo-check", hello}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 1)
			failed := lastOfType(t, r.stdout, "turn.failed")
			if b, _ := json.Marshal(failed); !bytes.Contains(b, []byte("fake bad request")) {
				t.Errorf("turn.failed %s does not carry the API's message", b)
			}
		},
	},
	{
		cli: fakemodel.CodexCLI, name: "resume-missing", ext: ".jsonl",
		about: "codex exec --json resume with an unknown thread id: exit 1, nothing on stdout, the reason on stderr",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			return []string{"exec", "--json", "--skip-git-repo-check", "resume", "00000000-0000-7000-8000-000000000000", recall}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 1)
			wantStderr(t, r, "no rollout found for thread id")
		},
	},
	{
		cli: fakemodel.CodexCLI, name: "hung",
		prepare: hungPrepare("exec", "--json", "--skip-git-repo-check", hello),
		kill:    time.Second,
		check:   wantKilled,
	},

	// Gemini CLI.
	{
		cli: fakemodel.GeminiCLI, name: "text", ext: ".txt",
		about: "gemini -p: the reply as plain text",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			return []string{"-p", hello}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			if got := strings.TrimSpace(r.stdout); got != helloReply {
				t.Errorf("stdout %q, want %q", got, helloReply)
			}
		},
	},
	{
		cli: fakemodel.GeminiCLI, name: "json", ext: ".json",
		about: "gemini -p -o json: one object {session_id, response, stats}",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			return []string{"-p", hello, "-o", "json"}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			obj := jsonLines(t, r.stdout)[0]
			wantField(t, obj, "response", helloReply)
			if id, _ := obj["session_id"].(string); !uuidRE.MatchString(id) {
				t.Errorf("session_id %q is not a UUID", id)
			}
			reqs := r.srv.Requests()
			if len(reqs) != 1 || reqs[0].API != fakemodel.Gemini || reqs[0].Model != fakemodel.GeminiModel {
				t.Errorf("requests %+v, want one Gemini call of %s", summary(reqs), fakemodel.GeminiModel)
			}
		},
	},
	{
		cli: fakemodel.GeminiCLI, name: "stream", ext: ".jsonl",
		about: "gemini -p -o stream-json: init, message (user), message deltas (assistant), result",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			return []string{"-p", hello, "-o", "stream-json"}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			wantField(t, jsonLines(t, r.stdout)[0], "type", "init")
			wantField(t, lastOfType(t, r.stdout, "result"), "status", "success")
			if got := geminiText(t, r.stdout); got != helloReply {
				t.Errorf("assistant text %q, want %q", got, helloReply)
			}
		},
	},
	{
		cli: fakemodel.GeminiCLI, name: "resume-stream", ext: ".jsonl",
		about: "gemini --resume SESSION_ID (same working directory), stream-json: the same session_id, the earlier turn sent again",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			out := first(t, c, "-p", remember, "-o", "json")
			id, _ := jsonLines(t, out)[0]["session_id"].(string)
			return []string{"-p", recall, "-o", "stream-json", "--resume", id}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			if got := geminiText(t, r.stdout); got != "echo: "+recall {
				t.Errorf("assistant text %q", got)
			}
			wantSameSession(t, r, lastOfType(t, r.stdout, "init")["session_id"])
			wantResumed(t, r.srv)
		},
	},
	{
		cli: fakemodel.GeminiCLI, name: "tool-stream", ext: ".jsonl",
		about: "gemini stream-json with a read_file tool call (allowed in the default approval mode): tool_use, tool_result lines",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			note := filepath.Join(c.Dir, "note.txt")
			if err := os.WriteFile(note, []byte(toolOutput+"\nsecond line\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			s.Next(fakemodel.ReadFile(note))
			return []string{"-p", "Read the note.", "-o", "stream-json"}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			lastOfType(t, r.stdout, "tool_use")
			lastOfType(t, r.stdout, "tool_result")
			if got := geminiText(t, r.stdout); got != "tool said: "+toolOutput {
				t.Errorf("assistant text %q", got)
			}
			wantToolRound(t, r.srv, "read_file", toolOutput)
		},
	},
	{
		cli: fakemodel.GeminiCLI, name: "shell-stream", ext: ".jsonl",
		about: "gemini --approval-mode yolo, stream-json, with a run_shell_command tool call",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			s.Next(fakemodel.Shell("echo " + toolOutput))
			return []string{"-p", "Run the tool.", "-o", "stream-json", "--approval-mode", "yolo"}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 0)
			if got := geminiText(t, r.stdout); got != "tool said: "+toolOutput {
				t.Errorf("assistant text %q", got)
			}
			wantToolRound(t, r.srv, "run_shell_command", toolOutput)
		},
	},
	{
		cli: fakemodel.GeminiCLI, name: "shell-denied-stream", ext: ".jsonl",
		about: "gemini, default approval mode (no run_shell_command offered), stream-json, when the model calls run_shell_command anyway",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			s.Next(fakemodel.Tool("run_shell_command", map[string]any{"command": "touch denied.txt"}))
			return []string{"-p", "Create a file.", "-o", "stream-json"}
		},
		check: func(t *testing.T, r run) {
			if _, err := os.Stat(filepath.Join(r.cli.Dir, "denied.txt")); err == nil {
				t.Error("denied.txt was created")
			}
		},
	},
	{
		cli: fakemodel.GeminiCLI, name: "error", ext: ".json",
		about: "gemini -o json when the API answers 500: exit 244 (500 mod 256), stdout empty, the JSON error on stderr after a stack trace",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			s.Always(fakemodel.Error(500, "fake overload"))
			return []string{"-p", hello, "-o", "json"}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 500%256)
			wantStderr(t, r, `"code": 500`)
			if n := len(r.srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1 (no retries)", n)
			}
		},
	},
	{
		cli: fakemodel.GeminiCLI, name: "error-stream", ext: ".jsonl",
		about: "gemini -o stream-json when the API answers 400: a result line with status error, exit 144 (400 mod 256)",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			s.Always(fakemodel.Error(400, "fake bad request"))
			return []string{"-p", hello, "-o", "stream-json"}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 400%256)
			wantField(t, lastOfType(t, r.stdout, "result"), "status", "error")
		},
	},
	{
		cli: fakemodel.GeminiCLI, name: "resume-missing", ext: ".json",
		about: "gemini --resume with an unknown session id: exit 42, nothing on stdout, the reason on stderr",
		prepare: func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
			first(t, c, "-p", remember, "-o", "json") // else "No previous sessions found"
			return []string{"-p", recall, "-o", "json", "--resume", "00000000-0000-4000-8000-000000000000"}
		},
		check: func(t *testing.T, r run) {
			wantExit(t, r, 42)
			wantStderr(t, r, "Invalid session identifier")
		},
	},
	{
		cli: fakemodel.GeminiCLI, name: "hung",
		prepare: hungPrepare("-p", hello, "-o", "stream-json"),
		kill:    time.Second,
		check:   wantKilled,
	},
}

// hungPrepare queues a reply that never ends.
func hungPrepare(args ...string) func(*testing.T, *fakemodel.Server, *fakemodel.CLI) []string {
	return func(t *testing.T, s *fakemodel.Server, c *fakemodel.CLI) []string {
		s.Always(fakemodel.Text("partial answer that never ends").Hung())
		return args
	}
}

// wantKilled checks that a run stuck on a hung reply was stopped by its
// context, and ended soon after it was cancelled (not at runTimeout: how
// long the CLI took to start and ask first depends on the machine's load).
func wantKilled(t *testing.T, r run) {
	t.Helper()
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("run: %v, want it cancelled", r.err)
	}
	if r.stopTook > runTimeout/2 {
		t.Errorf("the run ended %v after it was cancelled", r.stopTook)
	}
	t.Logf("stopped: %v; exit code %d; stdout:\n%s", r.err, r.res.ExitCode, r.stdout)
}

// wantSameSession checks that a resumed run reports the session it was
// asked to resume (the argument after "resume" or "--resume").
func wantSameSession(t *testing.T, r run, got any) {
	t.Helper()
	for i, a := range r.args[:len(r.args)-1] {
		if a == "resume" || a == "--resume" {
			if want := r.args[i+1]; got != want {
				t.Errorf("session %v, want the resumed %s", got, want)
			}
			return
		}
	}
	t.Errorf("no resume argument in %q", r.args)
}

func wantExit(t *testing.T, r run, code int) {
	t.Helper()
	if r.res.ExitCode != code {
		t.Errorf("exit code %d (%v), want %d", r.res.ExitCode, r.err, code)
	}
}

func wantStderr(t *testing.T, r run, sub string) {
	t.Helper()
	if !strings.Contains(r.stderr, sub) {
		t.Errorf("stderr does not contain %q:\n%s", sub, r.stderr)
	}
}

// wantResumed checks that the last turn sent the first turn's prompt and
// answer.
func wantResumed(t *testing.T, s *fakemodel.Server) {
	t.Helper()
	reqs := s.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	last := reqs[len(reqs)-1]
	tr := last.Transcript()
	for _, want := range []string{"user: " + remember, "assistant: echo: " + remember, "user: " + recall} {
		if !strings.Contains(tr, want+"\n") {
			t.Errorf("resumed request lacks %q; transcript:\n%s", want, tail(tr, 600))
		}
	}
	if got := last.Prompt(); got != recall {
		t.Errorf("prompt %q, want %q", got, recall)
	}
}

// wantToolRound checks that the model's call of tool was answered with a
// result holding output, in a second request.
func wantToolRound(t *testing.T, s *fakemodel.Server, tool, output string) {
	t.Helper()
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests %v, want 2", len(reqs), summary(reqs))
	}
	calls := reqs[1].ToolCalls()
	if len(calls) != 1 || calls[0].Tool != tool {
		t.Errorf("calls sent back %+v, want one %s", calls, tool)
	}
	res, ok := reqs[1].ToolResult()
	if !ok || !strings.Contains(res.Text, output) {
		t.Errorf("tool result %q (%v), want it to contain %q", res.Text, ok, output)
	}
}

func wantField(t *testing.T, obj map[string]any, key string, want any) {
	t.Helper()
	if got := obj[key]; got != want {
		t.Errorf("%s = %#v, want %#v", key, got, want)
	}
}

// jsonLines decodes a stream of JSON values (JSON lines, or one indented object).
func jsonLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var vals []map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var v map[string]any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decode output: %v\n%s", err, out)
		}
		vals = append(vals, v)
	}
	if len(vals) == 0 {
		t.Fatalf("no JSON in output %q", out)
	}
	return vals
}

func lastOfType(t *testing.T, out, typ string) map[string]any {
	t.Helper()
	lines := jsonLines(t, out)
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i]["type"] == typ {
			return lines[i]
		}
	}
	t.Fatalf("no %q line in output:\n%s", typ, out)
	return nil
}

// assistantText joins the text blocks of a Claude Code assistant line.
func assistantText(line map[string]any) string {
	msg, _ := line["message"].(map[string]any)
	content, _ := msg["content"].([]any)
	var b strings.Builder
	for _, c := range content {
		if block, _ := c.(map[string]any); block["type"] == "text" {
			s, _ := block["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// agentMessage returns the text of a Codex agent_message item.
func agentMessage(line map[string]any) string {
	item, _ := line["item"].(map[string]any)
	if item["type"] != "agent_message" {
		return ""
	}
	s, _ := item["text"].(string)
	return s
}

// geminiText joins the assistant message lines of Gemini CLI's
// stream-json output.
func geminiText(t *testing.T, out string) string {
	var b strings.Builder
	for _, l := range jsonLines(t, out) {
		if l["type"] == "message" && l["role"] == "assistant" {
			s, _ := l["content"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

func summary(reqs []fakemodel.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, string(r.API)+" "+r.Path+" "+r.Model)
	}
	return out
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
