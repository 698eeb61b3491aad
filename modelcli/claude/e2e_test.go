package claude

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"collab/internal/fakemodel"
	"collab/modelcli"
)

// The tests below run the real Claude Code against internal/fakemodel.
// Without the binary ($COLLAB_CLI_BIN_DIR, /tmp/npmcli/node_modules/.bin,
// PATH) they are skipped, or fail when $COLLAB_TEST_REQUIRE_CLIS is 1.

// realCLI returns an Adapter for the real CLI set up against a fresh server,
// and a request in the CLI's own working directory (Claude Code keeps its
// sessions per directory).
func realCLI(t *testing.T) (*Adapter, *fakemodel.Server, modelcli.Request) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real CLI")
	}
	s := fakemodel.Start(t)
	c := s.CLI(t, fakemodel.ClaudeCode)
	a := &Adapter{Bin: c.Path, Model: c.Model, KillGrace: 2 * time.Second, environ: c.Env}
	return a, s, modelcli.Request{Dir: c.Dir, Timeout: time.Minute}
}

func TestRealAnswerThenResume(t *testing.T) {
	a, s, req := realCLI(t)
	var live []string
	req.Prompt = "Remember the word pelican.\nThe second line is not echoed."
	req.OnEvent = func(e modelcli.Event) { live = append(live, e.Kind) }
	resp, err := a.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, resp.Stderr)
	}
	if resp.Text != "echo: Remember the word pelican." || resp.Session == "" || resp.CostUSD <= 0 || resp.Usage.Input <= 0 {
		t.Errorf("got %+v", resp)
	}
	if want := []string{"started", "progress", "completed"}; !slices.Equal(live, want) {
		t.Errorf("events: got %v, want %v", live, want)
	}

	req.Prompt, req.Session, req.OnEvent = "Which word?", resp.Session, nil
	again, err := a.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("resume: %v\nstderr: %s", err, again.Stderr)
	}
	if again.Text != "echo: Which word?" || again.Session != resp.Session {
		t.Errorf("resume: got text %q, session %q; want the echo, session %q", again.Text, again.Session, resp.Session)
	}
	reqs := s.Requests()
	if tr := reqs[len(reqs)-1].Transcript(); !strings.Contains(tr, "Remember the word pelican.") || !strings.Contains(tr, "echo: Remember the word pelican.") {
		t.Errorf("the resumed turn did not carry the first:\n%s", tr)
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
	if got, want := kinds(resp.Events), []string{"started", "tool_call:Bash", "progress", "completed"}; !slices.Equal(got, want) {
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
	if got, want := kinds(resp.Events), []string{"started", "tool_call:Bash", "progress", "needs_input", "completed"}; !slices.Equal(got, want) {
		t.Errorf("events: got %v, want %v", got, want)
	}
}

func TestRealAPIError(t *testing.T) {
	a, s, req := realCLI(t)
	s.Always(fakemodel.Error(400, "fake bad request"))
	req.Prompt = "hello"
	resp, err := a.Run(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "API Error: 400 fake bad request") {
		t.Fatalf("got %v, want the API's error", err)
	}
	if resp.Text != "" {
		t.Errorf("text %q, want none", resp.Text)
	}
}

func TestRealSessionGone(t *testing.T) {
	a, _, req := realCLI(t)
	req.Prompt, req.Session = "hello", "00000000-0000-4000-8000-000000000000"
	if _, err := a.Run(context.Background(), req); !errors.Is(err, modelcli.ErrSessionGone) {
		t.Fatalf("got %v, want ErrSessionGone", err)
	}
}

func TestRealKilled(t *testing.T) {
	a, s, req := realCLI(t)
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
	resp, err := a.Run(ctx, req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if resp.Text != "" || time.Since(start) > 30*time.Second {
		t.Errorf("got text %q after %v; want none, soon", resp.Text, time.Since(start))
	}
}
