package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestSendWaitAwaitingInput: while the agent's live turn waits for the
// answer to a question it asked mid-run, send --wait says so (awaiting
// input, with the question), the question itself is not taken for the
// reply, and collab status shows the state; the reply ends the wait.
// The watcher's files (claim, job record, question) are written here as
// a watcher writes them.
func TestSendWaitAwaitingInput(t *testing.T) {
	root := newTree(t)
	registered(t, root, "codex")
	env := map[string]string{"COLLAB_ROOT": root, "COLLAB_CHANNEL": "dev"}
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"send", "--wait", "--agent", "lead", "--to", "codex", "--poll", "10ms", "--timeout", "60s", "deploy it"},
			func(k string) string { return env[k] }, strings.NewReader(""), &stdout, &stderr)
	}()
	req := requestIn(t, root, "dev", "lead")

	r := tree.Root(root)
	store := &claim.Store{Root: r, Self: claim.Self("codex")}
	if _, outcome, err := store.Acquire("dev", req.Key()); err != nil || outcome != claim.Acquired {
		t.Fatalf("claim: %v %v", outcome, err)
	}
	q := req.Reply("codex", "h")
	q.Type, q.Content.Text = channel.TypeQuestion, "Codex asks to run a command outside its sandbox: make deploy"
	if err := (&channel.Writer{Root: r}).Post(&q); err != nil {
		t.Fatal(err)
	}
	rec, err := jobs.Start(r, jobs.Job{ID: jobs.NewID(), Agent: "codex", Channel: "dev", Message: req.Key(), From: "lead", Started: time.Now()}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	rec.Update(func(j *jobs.Job) {
		j.Status, j.Asked = jobs.AwaitingInput, q.ID
		j.Question = &modelcli.Question{Text: q.Content.Text, Options: modelcli.MidRunOptions}
	})
	rec.Event(modelcli.Event{Kind: modelcli.EventNeedsInput, Text: q.Content.Text})

	st := runCollab(t, env, "", "status", req.ID)
	if st.code != 0 || !strings.Contains(st.stdout, "awaiting_input") {
		t.Errorf("status: exit %d, stdout %q; want awaiting_input", st.code, st.stdout)
	}
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "codex: awaiting input") })
	if s := stderr.String(); !strings.Contains(s, "make deploy") || !strings.Contains(s, q.ID) {
		t.Errorf("send --wait stderr %q, want the awaiting input state with the question", s)
	}
	select {
	case err := <-done:
		t.Fatalf("send --wait ended on the question: %v", err)
	default:
	}
	if r := runCollab(t, env, "", "send", "--agent", "codex", "--to", "lead", "--in-reply-to", req.ID, "done: deployed"); r.code != 0 {
		t.Fatalf("reply: %+v", r)
	}
	if err := <-done; err != nil || stdout.String() != "done: deployed\n" {
		t.Errorf("send --wait: %v, stdout %q; want the reply, not the question", err, stdout.String())
	}
}
