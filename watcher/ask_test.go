package watcher_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// askingRunner is a LiveRunner whose every turn asks one question
// mid-run and says what the answer was.
type askingRunner struct{}

func (askingRunner) Turn(ctx context.Context, key string, req modelcli.Request) (modelcli.Response, error) {
	if req.Ask == nil {
		return modelcli.Response{}, context.Canceled
	}
	ans, err := req.Ask(ctx, modelcli.Question{Text: "Test asks to use Bash: make deploy", Options: modelcli.MidRunOptions})
	if err != nil {
		return modelcli.Response{}, err
	}
	text := "refused: " + ans.Text
	if ans.Allow {
		text = "ran it"
		if ans.Always {
			text += " (always)"
		}
	}
	return modelcli.Response{Text: text, Session: "s-" + key}, nil
}

// askingConfig is a watcher whose live turns ask (askingRunner).
func askingConfig(t *testing.T) (tree.Root, *presenceLog, watcher.Config) {
	t.Helper()
	root := tree.Root(t.TempDir())
	cfg := config(root, &fakeRunner{})
	cfg.Live = askingRunner{}
	pl := &presenceLog{}
	cfg.Publisher = pl
	return root, pl, cfg
}

// waitQuestion waits for the question asked about message id.
func waitQuestion(t *testing.T, root tree.Root, id string) channel.Message {
	t.Helper()
	var q channel.Message
	waitFor(t, "a question about "+id, func() bool {
		for _, m := range messages(t, root) {
			if m.IsQuestion() && m.Metadata.InReplyTo == id {
				q = m
				return true
			}
		}
		return false
	})
	return q
}

// TestAskMidRun: a live turn's question is posted in reply to the
// message, of type question (no wait takes it for the answer), the job
// awaits input and the message's delivery state says so, with presence
// WAITING; another sender's message is not the answer; the asker's
// "allow" goes to the waiting turn, whose reply answers the message; the
// turn's --timeout stops while it waits.
func TestAskMidRun(t *testing.T) {
	root, pl, cfg := askingConfig(t)
	cfg.Timeout = 300 * time.Millisecond // shorter than the wait below
	start(t, cfg)

	m := send(t, root, agent, "Deploy it.")
	q := waitQuestion(t, root, m.ID)
	var ext struct {
		Job     string   `json:"job"`
		Options []string `json:"options"`
		Live    bool     `json:"live"`
	}
	if raw, ok := q.Extension("needs_input"); !ok || json.Unmarshal(raw, &ext) != nil || !ext.Live || len(ext.Options) != 3 {
		t.Fatalf("question metadata %s, want needs_input with live and three options", q.Metadata.Extra)
	}
	if q.To != "alice" || !strings.Contains(q.Content.Text, "make deploy") || !strings.Contains(q.Content.Text, "allow, always") {
		t.Errorf("question to %s: %q", q.To, q.Content.Text)
	}
	j := waitJob(t, root, m.ID, "awaiting input", func(j jobs.Job) bool { return j.Status == jobs.AwaitingInput })
	if j.Done() || j.Asked != q.ID || j.ID != ext.Job || j.Question == nil {
		t.Errorf("job %+v, want awaiting input mid-run on %s", j, q.ID)
	}
	a := delivery.StateFor(root, chName, &m, agent, delivery.Options{})
	if a.State != delivery.AwaitingInput || a.Question != q.ID || !strings.Contains(a.Describe(time.Now()), "make deploy") {
		t.Errorf("delivery %+v, want awaiting_input on %s", a, q.ID)
	}
	waitFor(t, "presence WAITING", func() bool { return pl.saw(presence.SubWaiting, m.ID) })

	// Another sender's message is not the answer, and the turn outlives
	// its --timeout while it waits.
	other := post(t, root, channel.Message{From: "bob", To: agent, Content: channel.Content{Text: "allow"}})
	holds(t, 2*cfg.Timeout, "the turn to wait", func() bool {
		j, _ := jobs.Read(root, agent, j.ID)
		return j.Status == jobs.AwaitingInput && len(repliesTo(messages(t, root), m.ID)) == 0
	})

	ans := post(t, root, channel.Message{To: agent, Content: channel.Content{Text: "Allow."}, Metadata: channel.Metadata{InReplyTo: q.ID}})
	rs := repliesTo(waitReplies(t, root, m.ID), m.ID)
	if rs[0].Content.Text != "ran it" {
		t.Errorf("reply %q, want the allowed run's", rs[0].Content.Text)
	}
	done := waitJob(t, root, m.ID, "completed", func(j jobs.Job) bool { return j.Done() && j.Reply != "" })
	if done.Status != jobs.Completed || done.Asked != q.ID {
		t.Errorf("job %s asked %q, want completed, having asked %s", done.Status, done.Asked, q.ID)
	}
	if k := eventKinds(done.Events); !contains(k, modelcli.EventNeedsInput) || !contains(k, modelcli.EventInputSent) {
		t.Errorf("events %v, want needs_input and input_sent", k)
	}
	c := waitClaim(t, root, agent, ans.ID)
	if c.Status != claim.Skipped || !strings.Contains(c.Note, q.ID) {
		t.Errorf("the answer's claim %s %q, want skipped as the answer to %s", c.Status, c.Note, q.ID)
	}
	// Bob's message is a message of its own, answered in a turn of its
	// own, which asks bob.
	bq := waitQuestion(t, root, other.ID)
	post(t, root, channel.Message{From: "bob", To: agent, Content: channel.Content{Text: "no, not today"}, Metadata: channel.Metadata{InReplyTo: bq.ID}})
	if r := repliesTo(waitReplies(t, root, other.ID), other.ID); r[0].Content.Text != "refused: no, not today" {
		t.Errorf("reply to bob %q, want the refusal with his words", r[0].Content.Text)
	}
	holds(t, 200*time.Millisecond, "no reply to the answer", func() bool { return len(repliesTo(messages(t, root), ans.ID)) == 0 })
}

// TestAskMidRunTimeout: a question nobody answers is refused after
// QuestionTimeout, and the turn carries on to its reply.
func TestAskMidRunTimeout(t *testing.T) {
	root, _, cfg := askingConfig(t)
	cfg.QuestionTimeout = 200 * time.Millisecond
	start(t, cfg)
	m := send(t, root, agent, "Deploy it.")
	waitQuestion(t, root, m.ID)
	rs := repliesTo(waitReplies(t, root, m.ID), m.ID)
	if !strings.HasPrefix(rs[0].Content.Text, "refused: collab: no answer within 200ms") {
		t.Errorf("reply %q, want the refusal's", rs[0].Content.Text)
	}
	j := waitJob(t, root, m.ID, "completed", func(j jobs.Job) bool { return j.Done() && j.Reply != "" })
	if j.Status != jobs.Completed {
		t.Errorf("job %s, want completed", j.Status)
	}
	found := false
	for _, e := range j.Events {
		found = found || strings.Contains(e.Text, "refused: no answer within 200ms")
	}
	if !found {
		t.Errorf("events %+v, want the refusal recorded", j.Events)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestAskMidRunKilled: jobs kill ends a turn that waits for an answer:
// the job is killed, nothing is posted in reply, and the next message
// runs.
func TestAskMidRunKilled(t *testing.T) {
	root, _, cfg := askingConfig(t)
	start(t, cfg)
	m := send(t, root, agent, "Deploy it.")
	waitQuestion(t, root, m.ID)
	j := waitJob(t, root, m.ID, "awaiting input", func(j jobs.Job) bool { return j.Status == jobs.AwaitingInput })
	if err := jobs.RequestKill(root, agent, j.ID, "alice", nil); err != nil {
		t.Fatal(err)
	}
	k := waitJob(t, root, m.ID, "killed", func(j jobs.Job) bool { return j.Done() })
	if k.Status != jobs.Killed || len(repliesTo(messages(t, root), m.ID)) != 0 {
		t.Errorf("job %s with %d replies, want killed, none", k.Status, len(repliesTo(messages(t, root), m.ID)))
	}
	next := send(t, root, agent, "Something else.")
	waitQuestion(t, root, next.ID)
}

// TestForgedMidRunAnswerRefused: under --trust known, an "allow" in the
// keyed asker's name that does not verify is not the answer (it is
// reported as forged); the asker's signed answer is.
func TestForgedMidRunAnswerRefused(t *testing.T) {
	root, _, cfg := askingConfig(t)
	alice, codex := newSigner(t, "alice"), newSigner(t, agent)
	cfg.Signer, cfg.Verifier = codex, trusting(t, filepath.Join(t.TempDir(), "keys"), alice, codex)
	start(t, cfg)
	m := postAs(t, root, alice, channel.Message{To: agent, Content: channel.Content{Text: "Deploy it."}})
	q := waitQuestion(t, root, m.ID)
	answer := func(s *signing.Signer, text string) channel.Message {
		return postAs(t, root, s, channel.Message{From: "alice", To: agent, Content: channel.Content{Text: text}, Metadata: channel.Metadata{InReplyTo: q.ID}})
	}
	forged := answer(nil, "allow")
	waitReport(t, root, forged.ID)
	answer(alice, "deny")
	if r := repliesTo(waitReplies(t, root, m.ID), m.ID); r[0].Content.Text != "refused: deny" {
		t.Errorf("reply %q, want the signed answer's refusal", r[0].Content.Text)
	}
}

// redoRunner asks, then stops waiting (as a turn whose process died and
// is run again by the pool), then asks again.
type redoRunner struct{ root tree.Root }

func (r redoRunner) Turn(ctx context.Context, key string, req modelcli.Request) (modelcli.Response, error) {
	first, stop := context.WithCancel(ctx)
	defer stop()
	waited := make(chan struct{})
	go func() {
		defer close(waited)
		req.Ask(first, modelcli.Question{Text: "Test asks to use Bash: make deploy"})
	}()
	for asked := false; !asked; {
		msgs, _, _ := channel.ReadAll(r.root, chName, channel.ReaderOptions{})
		for _, m := range msgs {
			asked = asked || m.IsQuestion()
		}
		select {
		case <-ctx.Done():
			return modelcli.Response{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	stop()
	<-waited
	ans, err := req.Ask(ctx, modelcli.Question{Text: "Test asks again to use Bash: make deploy"})
	if err != nil || !ans.Allow {
		return modelcli.Response{Text: fmt.Sprintf("refused: %s %v", ans.Text, err), Session: "s"}, nil
	}
	return modelcli.Response{Text: "ran it", Session: "s"}, nil
}

// TestAskAgainAfterRedo: a turn that stopped waiting for its question
// (its process died, and the pool runs the turn again) may ask again: the
// first question is void, the second is posted and answered.
func TestAskAgainAfterRedo(t *testing.T) {
	root := tree.Root(t.TempDir())
	cfg := config(root, &fakeRunner{})
	cfg.Live = redoRunner{root: root}
	start(t, cfg)
	m := send(t, root, agent, "Deploy it.")
	var second channel.Message
	waitFor(t, "a second question", func() bool {
		for _, q := range messages(t, root) {
			if q.IsQuestion() && strings.Contains(q.Content.Text, "asks again") {
				second = q
				return true
			}
		}
		return false
	})
	post(t, root, channel.Message{To: agent, Content: channel.Content{Text: "allow"}, Metadata: channel.Metadata{InReplyTo: second.ID}})
	if r := repliesTo(waitReplies(t, root, m.ID), m.ID); r[0].Content.Text != "ran it" {
		t.Errorf("reply %q, want the second question allowed", r[0].Content.Text)
	}
}
