package codex

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/testsupport/clitest"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// The tests below run the real Codex CLI against internal/testsupport/fakemodel
// (see clitest.RealCLI): without the binary they are skipped, or fail
// when $COLLAB_TEST_REQUIRE_CLIS is 1.

// realCLI returns an Adapter for the real CLI set up against a fresh
// server, and a request in the CLI's own working directory.
func realCLI(t *testing.T) (*Adapter, *fakemodel.Server, modelcli.Request) {
	t.Helper()
	s, c, req := clitest.RealCLI(t, fakemodel.CodexCLI)
	return &Adapter{Bin: c.Path, Model: c.Model, KillGrace: 2 * time.Second, environ: c.Env}, s, req
}

func TestRealAnswerThenResume(t *testing.T) {
	a, s, req := realCLI(t)
	resp, again := clitest.RunResumed(t, a, s, req)
	if resp.Usage.Output <= 0 {
		t.Errorf("usage %+v, want output counted", resp.Usage)
	}
	// Codex counts the whole thread (here about twice the first run's
	// input); the adapter reports this run's share.
	if again.Usage.Input <= 0 || again.Usage.Input >= resp.Usage.Input*3/2 || again.Usage.Output > resp.Usage.Output {
		t.Errorf("resume usage %+v after %+v: want this run's share", again.Usage, resp.Usage)
	}
}

func TestRealTool(t *testing.T) {
	a, s, req := realCLI(t)
	s.Next(fakemodel.Shell("echo tool-output-42"))
	req.Prompt = "Run the tool."
	resp, err := a.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, resp.Stderr)
	}
	if resp.Text != "tool said: tool-output-42" {
		t.Errorf("got text %q, want the tool's output", resp.Text)
	}
	if got, want := clitest.Kinds(resp.Events), []string{"started", "tool_call:command_execution", "progress", "completed"}; !slices.Equal(got, want) {
		t.Errorf("events: got %v, want %v", got, want)
	}
}

func TestRealAPIError(t *testing.T) {
	a, s, req := realCLI(t)
	if err := clitest.RunAPIError(t, a, s, req); err.Error() != "codex: fake bad request" {
		t.Errorf("got %v, want the API's error", err)
	}
}

func TestRealSessionGone(t *testing.T) {
	a, _, req := realCLI(t)
	clitest.TestSessionGone(t, a, req, "00000000-0000-7000-8000-000000000000")
}

func TestRealKilled(t *testing.T) {
	a, s, req := realCLI(t)
	clitest.TestKilled(t, a, s, req)
}
