package gemini

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

// The tests below run the real Gemini CLI against internal/testsupport/fakemodel
// (see clitest.RealCLI): without the binary they are skipped, or fail
// when $COLLAB_TEST_REQUIRE_CLIS is 1.

// realCLI returns an Adapter for the real CLI set up against a fresh
// server, and a request in the CLI's own working directory.
func realCLI(t *testing.T) (*Adapter, *fakemodel.Server, modelcli.Request) {
	t.Helper()
	s, c, req := clitest.RealCLI(t, fakemodel.GeminiCLI)
	return &Adapter{Bin: c.Path, Model: c.Model, KillGrace: 2 * time.Second, environ: c.Env}, s, req
}

func TestRealAnswerThenResume(t *testing.T) {
	a, s, req := realCLI(t)
	resp, _ := clitest.RunResumed(t, a, s, req)
	if resp.Usage.Output <= 0 {
		t.Errorf("usage %+v, want output counted", resp.Usage)
	}
}

func TestRealTool(t *testing.T) {
	a, s, req := realCLI(t)
	if err := os.WriteFile(filepath.Join(req.Dir, "note.txt"), []byte("tool-output-42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Next(fakemodel.ReadFile(filepath.Join(req.Dir, "note.txt")))
	req.Prompt = "Read the note."
	resp, err := a.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, resp.Stderr)
	}
	if !strings.HasPrefix(resp.Text, "tool said: ") {
		t.Errorf("got text %q, want the tool's output", resp.Text)
	}
	if got, want := clitest.Kinds(resp.Events), []string{"started", "tool_call:read_file", "progress", "completed"}; !slices.Equal(got, want) {
		t.Errorf("events: got %v, want %v", got, want)
	}
}

func TestRealAPIError(t *testing.T) {
	a, s, req := realCLI(t)
	if err := clitest.RunAPIError(t, a, s, req); err.Error() != "gemini: fake bad request (HTTP 400 INVALID_ARGUMENT)" {
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
