package claude

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"collab/internal/clitest"
	"collab/internal/fakemodel"
	"collab/modelcli"
)

// The tests below run the real Claude Code against internal/fakemodel
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
