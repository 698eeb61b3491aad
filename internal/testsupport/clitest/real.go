package clitest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
)

// RealCLI sets up the named real CLI (fakemodel.ClaudeCode, CodexCLI or
// GeminiCLI) against a fresh fakemodel.Server, and returns both and a
// request in the CLI's own working directory (the CLIs keep their
// sessions per directory). Without the binary ($COLLAB_CLI_BIN_DIR,
// /tmp/npmcli/node_modules/.bin, PATH) the test is skipped, or fails when
// $COLLAB_TEST_REQUIRE_CLIS is 1; in -short mode it is skipped.
func RealCLI(t *testing.T, name string) (*fakemodel.Server, *fakemodel.CLI, modelcli.Request) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real CLI")
	}
	s := fakemodel.Start(t)
	c := s.CLI(t, name)
	return s, c, modelcli.Request{Dir: c.Dir, Timeout: time.Minute}
}

// RunResumed runs r, a real CLI set up by RealCLI, on a first prompt and
// then resumes its session with a second. It fails t unless both runs
// answer with the fake model's echo in the same session, the first with
// its usage and the events started, progress, completed, and the resumed
// turn carried the first. It returns both responses, for the adapter's
// own checks.
func RunResumed(t *testing.T, r Runner, s *fakemodel.Server, req modelcli.Request) (first, again modelcli.Response) {
	t.Helper()
	var live []string
	req.Prompt = "Remember the word pelican.\nThe second line is not echoed."
	req.OnEvent = func(e modelcli.Event) { live = append(live, e.Kind) }
	first, err := r.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, first.Stderr)
	}
	if first.Text != "echo: Remember the word pelican." || first.Session == "" || first.Usage.Input <= 0 {
		t.Errorf("got %+v", first)
	}
	if want := []string{"started", "progress", "completed"}; !slices.Equal(live, want) {
		t.Errorf("events: got %v, want %v", live, want)
	}

	req.Prompt, req.Session, req.OnEvent = "Which word?", first.Session, nil
	again, err = r.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("resume: %v\nstderr: %s", err, again.Stderr)
	}
	if again.Text != "echo: Which word?" || again.Session != first.Session {
		t.Errorf("resume: got text %q, session %q; want the echo, session %q", again.Text, again.Session, first.Session)
	}
	reqs := s.Requests()
	if tr := reqs[len(reqs)-1].Transcript(); !strings.Contains(tr, "Remember the word pelican.") || !strings.Contains(tr, "echo: Remember the word pelican.") {
		t.Errorf("the resumed turn did not carry the first:\n%s", tr)
	}
	return first, again
}

// RunAPIError runs r, a real CLI set up by RealCLI, with the model
// failing every call with HTTP 400 "fake bad request". It fails t unless
// the run fails without text, and returns the error for the adapter's own
// checks of its message.
func RunAPIError(t *testing.T, r Runner, s *fakemodel.Server, req modelcli.Request) error {
	t.Helper()
	s.Always(fakemodel.Error(400, "fake bad request"))
	req.Prompt = "hello"
	resp, err := r.Run(context.Background(), req)
	if err == nil {
		t.Fatal("got success, want the API's error")
	}
	if resp.Text != "" {
		t.Errorf("text %q, want none", resp.Text)
	}
	return err
}

// TestSessionGone checks that resuming session, which the real CLI does
// not have, fails with modelcli.ErrSessionGone.
func TestSessionGone(t *testing.T, r Runner, req modelcli.Request, session string) {
	t.Helper()
	req.Prompt, req.Session = "hello", session
	if _, err := r.Run(context.Background(), req); !errors.Is(err, modelcli.ErrSessionGone) {
		t.Fatalf("got %v, want ErrSessionGone", err)
	}
}

// TestKilled checks that cancelling a run whose model never finishes its
// answer stops the real CLI soon, with context.Canceled and no text.
func TestKilled(t *testing.T, r Runner, s *fakemodel.Server, req modelcli.Request) {
	t.Helper()
	s.Always(fakemodel.Text("an answer that never ends").Hung())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if _, err := s.WaitRequests(ctx, 1); err == nil {
			time.Sleep(200 * time.Millisecond)
		}
		cancel()
	}()
	req.Prompt = "hello"
	start := time.Now()
	resp, err := r.Run(ctx, req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if resp.Text != "" || time.Since(start) > 30*time.Second {
		t.Errorf("got text %q after %v; want none, soon", resp.Text, time.Since(start))
	}
}
