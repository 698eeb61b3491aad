package claude

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/testsupport/clitest"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// The tests below run the real Claude Code against internal/testsupport/fakemodel
// (see clitest.RealCLI): without the binary they are skipped, or fail
// when $COLLAB_TEST_REQUIRE_CLIS is 1.

// realCLI returns an Adapter for the real CLI set up against a fresh
// server, and a request in the CLI's own working directory.
func realCLI(t *testing.T) (*Adapter, *fakemodel.Server, modelcli.Request) {
	t.Helper()
	s, c, req := clitest.RealCLI(t, fakemodel.ClaudeCode)
	return &Adapter{Bin: c.Path, Model: c.Model, KillGrace: 2 * time.Second, environ: c.Env}, s, req
}

func TestRealAnswerThenResume(t *testing.T) {
	a, s, req := realCLI(t)
	if resp, _ := clitest.RunResumed(t, a, s, req); resp.CostUSD <= 0 {
		t.Errorf("cost %v, want it reported", resp.CostUSD)
	}
}

func TestRealToolAndDenial(t *testing.T) {
	a, s, req := realCLI(t)
	s.Next(fakemodel.Shell("echo tool-output-42"))
	req.Prompt = "Run the tool."
	resp, err := a.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, resp.Stderr)
	}
	if resp.Text != "tool said: tool-output-42" || resp.Question != nil {
		t.Errorf("got text %q, question %v; want the tool's output and no question", resp.Text, resp.Question)
	}
	if got, want := clitest.Kinds(resp.Events), []string{"started", "tool_call:Bash", "progress", "completed"}; !slices.Equal(got, want) {
		t.Errorf("events: got %v, want %v", got, want)
	}

	// acceptEdits runs echo, not an interpreter: denied, and asked about.
	s.Next(fakemodel.Shell("python3 -c 'print(1)'"))
	resp, err = a.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, resp.Stderr)
	}
	if q := resp.Question; q == nil || !strings.Contains(q.Text, "Bash(python3 -c 'print(1)')") {
		t.Errorf("question: got %+v, want one about Bash(python3 -c 'print(1)')", q)
	}
	if got, want := clitest.Kinds(resp.Events), []string{"started", "tool_call:Bash", "progress", "needs_input", "completed"}; !slices.Equal(got, want) {
		t.Errorf("events: got %v, want %v", got, want)
	}
}

func TestRealAPIError(t *testing.T) {
	a, s, req := realCLI(t)
	if err := clitest.RunAPIError(t, a, s, req); !strings.Contains(err.Error(), "API Error: 400 fake bad request") {
		t.Errorf("got %v, want the API's error", err)
	}
}

func TestRealSessionGone(t *testing.T) {
	a, _, req := realCLI(t)
	clitest.TestSessionGone(t, a, req, "00000000-0000-4000-8000-000000000000")
}

func TestRealKilled(t *testing.T) {
	a, s, req := realCLI(t)
	clitest.TestKilled(t, a, s, req)
}

// TestRealDenialAllowed: the rules of a denial's question, given as
// Request.AllowTools to the run that resumes the session, let Claude Code
// make exactly the calls it was denied.
func TestRealDenialAllowed(t *testing.T) {
	a, s, req := realCLI(t)
	outside := filepath.Join(t.TempDir(), "granted.txt") // not in the project: acceptEdits asks
	cmd := "python3 -c 'print(6*7)'"
	for _, turn := range []string{"denied", "allowed"} {
		s.Next(fakemodel.Shell(cmd))
		s.Next(fakemodel.Tool("Write", map[string]any{"file_path": outside, "content": "granted\n"}))
		req.Prompt = "Run it and write the file."
		resp, err := a.Run(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v\nstderr: %s", turn, err, resp.Stderr)
		}
		_, statErr := os.Stat(outside)
		if turn == "denied" {
			want := []string{"Bash(" + cmd + ")", "Edit(/" + outside + ")"}
			if resp.Question == nil || !slices.Equal(resp.Question.Allow, want) {
				t.Fatalf("question %+v, want one allowing %q", resp.Question, want)
			}
			if statErr == nil {
				t.Fatal("the denied Write wrote the file")
			}
			req.Session, req.AllowTools = resp.Session, resp.Question.Allow
			continue
		}
		if resp.Question != nil {
			t.Errorf("allowed run asked again: %+v", resp.Question)
		}
		if statErr != nil {
			t.Errorf("the allowed Write did not write the file: %v", statErr)
		}
		// The model saw the command's output as the first tool result.
		var saw bool
		for _, r := range s.Requests() {
			if res, ok := r.ToolResult(); ok && fakemodel.OutputLine(res.Text) == "42" {
				saw = true
			}
		}
		if !saw {
			t.Errorf("no turn carried the allowed command's output 42")
		}
	}
}
