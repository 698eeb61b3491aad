package task_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/task"
)

// TestRecordTypes: a checkpoint takes one of seed 003's types (default
// progress) and the files it changed; any other type is ErrInvalid and
// records nothing.
func TestRecordTypes(t *testing.T) {
	b := newBoard(t, tree.Root(t.TempDir()), &clock{t: t0})
	t1 := add(t, b, "write the parser")
	if _, err := b.Claim(t1.ID, "codex"); err != nil {
		t.Fatal(err)
	}
	for _, typ := range task.CheckpointTypes {
		if _, err := b.Record(t1.ID, "codex", task.Checkpoint{Type: typ, Text: typ + " text", Files: []string{"a.go"}}); err != nil {
			t.Errorf("type %s: %v", typ, err)
		}
	}
	if _, err := b.Record(t1.ID, "codex", task.Checkpoint{Text: "no type"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []task.Checkpoint{
		{Type: "milestone", Text: "x"},
		{Type: "Plan", Text: "x"},
		{Text: "x", Files: []string{""}},
		{Text: "x", Files: []string{"a\nb"}},
	} {
		if _, err := b.Record(t1.ID, "codex", c); !errors.Is(err, task.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", c, err)
		}
	}
	_, evs, err := b.Events(t1.ID)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs[1:] {
		types = append(types, e.Type)
	}
	want := append(slices.Clone(task.CheckpointTypes), task.CkProgress)
	if !slices.Equal(types, want) {
		t.Errorf("types %q, want %q", types, want)
	}
	if last := evs[len(evs)-1]; last.Summary != "no type" || last.Files != nil {
		t.Errorf("last event %+v", last)
	}
	if !slices.Equal(evs[1].Files, []string{"a.go"}) {
		t.Errorf("files %q, want [a.go]", evs[1].Files)
	}
}

// TestDecodeCheckpointFields: an event file with a bad type, or a type or
// files on another event than a checkpoint, is malformed.
func TestDecodeCheckpointFields(t *testing.T) {
	base := `"seq":1,"status":"claimed","owner":"codex","agent":"codex","time":"2026-01-11T16:00:00Z"`
	for _, c := range []struct {
		name, extra string
		ok          bool
	}{
		{"old checkpoint", `"event":"checkpoint","summary":"x"`, true},
		{"typed", `"event":"checkpoint","summary":"x","type":"decision","files":["a.go"]`, true},
		{"bad type", `"event":"checkpoint","summary":"x","type":"whim"`, false},
		{"type on a claim", `"event":"claimed","type":"plan"`, false},
		{"files on a claim", `"event":"claimed","files":["a.go"]`, false},
	} {
		_, err := task.DecodeEvent([]byte("{"+base+","+c.extra+"}"), 1)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
		}
	}
}

// TestCheckpointSigned: a typed checkpoint with files is signed over its
// type and files (changing either breaks it), and an event without them
// keeps the payload it had before types, so old signed events verify.
func TestCheckpointSigned(t *testing.T) {
	codex, _, claude := signedBoards(t, signing.Known)
	t1 := add(t, codex, "write the parser")
	if _, err := codex.Claim(t1.ID, "codex"); err != nil {
		t.Fatal(err)
	}
	if _, err := codex.Record(t1.ID, "codex", task.Checkpoint{Type: task.CkDecision, Text: "JWT", Files: []string{"auth.go", "go.mod"}}); err != nil {
		t.Fatal(err)
	}
	_, evs, err := claude.Events(t1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[1].Verdict != signing.Verified || evs[1].Type != task.CkDecision {
		t.Fatalf("events %+v, want a verified decision", evs)
	}
	for _, change := range []func(e *task.Event){
		func(e *task.Event) { e.Type = task.CkProgress },
		func(e *task.Event) { e.Files = e.Files[:1] },
		func(e *task.Event) { e.Files = nil; e.Type = "" },
	} {
		e := evs[1]
		change(&e)
		if got := e.Verify(claude.Verifier, "dev", t1.ID); got != signing.BadSignature {
			t.Errorf("changed %+v: %s, want bad-signature", e, got)
		}
	}
	// The payload of an event without type and files is the one before
	// checkpoint types: the thirteen fields alone.
	old := evs[0]
	want := signing.Payload(task.KindEvent, "dev", t1.ID, strconv.Itoa(old.Seq), old.Event, old.Status, old.Owner,
		old.Agent, old.Host, old.Time.UTC().Format(time.RFC3339Nano), old.Summary, old.Outcome, old.Error, old.Note)
	if got := old.Payload("dev", t1.ID); string(got) != string(want) {
		t.Errorf("payload of an untyped event changed:\n%q\nwant\n%q", got, want)
	}
	if old.Verdict != signing.Verified {
		t.Errorf("claim: %s, want verified", old.Verdict)
	}
}

// TestContext: the context of a task holds the task, its checkpoints and
// the outcomes of its dependencies, done or failed.
func TestContext(t *testing.T) {
	b := newBoard(t, tree.Root(t.TempDir()), &clock{t: t0})
	t1 := add(t, b, "write the parser")
	t2 := add(t, b, "write the lexer")
	t3, err := b.Add(task.NewTask{Title: "fuzz it", Body: "fuzz the parser", Depends: []string{t1.ID, t2.ID}, By: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct{ id, outcome string }{{t1.ID, "merged as 3f2c1a"}, {t2.ID, ""}} {
		if _, err := b.Claim(s.id, "codex"); err != nil {
			t.Fatal(err)
		}
		if s.outcome != "" {
			_, err = b.Finish(s.id, "codex", s.outcome)
		} else {
			_, err = b.Fail(s.id, "codex", "no grammar")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := b.Context(t3.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxTokens != task.DefaultMaxTokens || c.Cut || c.Task.Body != "fuzz the parser" || c.Task.Status != task.Pending || len(c.Checkpoints) != 0 {
		t.Errorf("context %+v", c)
	}
	want := []task.DependencyOutcome{
		{ID: t1.ID, Title: "write the parser", Status: task.Done, Outcome: "merged as 3f2c1a"},
		{ID: t2.ID, Title: "write the lexer", Status: task.Failed, Error: "no grammar"},
	}
	if !slices.EqualFunc(c.Dependencies, want, func(a, b task.DependencyOutcome) bool {
		return a.ID == b.ID && a.Title == b.Title && a.Status == b.Status && a.Outcome == b.Outcome && a.Error == b.Error
	}) {
		t.Errorf("dependencies %+v, want %+v", c.Dependencies, want)
	}
	text := c.Text()
	for _, w := range []string{"# Task t3: fuzz it", "state: pending, blocked by failed t2", "fuzz the parser", "- t1 (done): write the parser", "outcome: merged as 3f2c1a", "error: no grammar", "## Checkpoints"} {
		if !strings.Contains(text, w) {
			t.Errorf("text lacks %q:\n%s", w, text)
		}
	}
	if _, err := b.Context("t9", 0); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("context of t9: %v, want ErrNotFound", err)
	}
}

// TestContextCut: cut to the budget, the context keeps the newest
// checkpoints whole, says how many older ones it left out, and stays
// within the budget; a newest checkpoint too long for it is shortened and
// marked.
func TestContextCut(t *testing.T) {
	clk := &clock{t: t0}
	b := newBoard(t, tree.Root(t.TempDir()), clk)
	t1 := add(t, b, "write the parser")
	if _, err := b.Claim(t1.ID, "codex"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 40; i++ {
		clk.Add(time.Second)
		text := "step " + strconv.Itoa(i) + " " + strings.Repeat("x", 200)
		if _, err := b.Record(t1.ID, "codex", task.Checkpoint{Text: text, Files: []string{"f" + strconv.Itoa(i) + ".go"}}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := b.Context(t1.ID, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Cut || c.Omitted == 0 || len(c.Checkpoints)+c.Omitted != 40 || c.Tokens > 1000 {
		t.Fatalf("cut: %d kept, %d omitted, %d tokens, cut %v; want some left out, within 1000 tokens", len(c.Checkpoints), c.Omitted, c.Tokens, c.Cut)
	}
	last := c.Checkpoints[len(c.Checkpoints)-1]
	if !strings.HasPrefix(last.Text, "step 40 ") || last.Cut || c.Checkpoints[0].Seq != 42-len(c.Checkpoints) {
		t.Errorf("kept %+v ... %+v, want the newest, whole", c.Checkpoints[0], last)
	}
	marker := strconv.Itoa(c.Omitted) + " older checkpoints left out to fit 1000 tokens"
	if text := c.Text(); !strings.Contains(text, marker) || task.Tokens(text) != c.Tokens {
		t.Errorf("text lacks %q or is not %d tokens:\n%s", marker, c.Tokens, text)
	}
	all, err := b.Context(t1.ID, 100000)
	if err != nil || all.Cut || len(all.Checkpoints) != 40 {
		t.Errorf("with room: %d kept, cut %v, %v; want all 40", len(all.Checkpoints), all.Cut, err)
	}

	// One checkpoint longer than the whole budget.
	if _, err := b.Record(t1.ID, "codex", task.Checkpoint{Text: strings.Repeat("y", 10000)}); err != nil {
		t.Fatal(err)
	}
	c, err = b.Context(t1.ID, 500)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Checkpoints) != 1 || !c.Checkpoints[0].Cut || !strings.HasSuffix(c.Checkpoints[0].Text, "[… cut]") || c.Omitted != 40 || c.Tokens > 500 {
		t.Errorf("huge newest: %d kept (cut %v), %d omitted, %d tokens; want it alone, cut, within 500", len(c.Checkpoints), c.Checkpoints[0].Cut, c.Omitted, c.Tokens)
	}
}

// TestContextLeavesOutForged: a checkpoint that is left out of the state
// (forged) is left out of the context.
func TestContextLeavesOutForged(t *testing.T) {
	codex, forger, claude := signedBoards(t, signing.Known)
	t1 := add(t, codex, "write the parser")
	if _, err := codex.Claim(t1.ID, "codex"); err != nil {
		t.Fatal(err)
	}
	if _, err := forger.Record(t1.ID, "codex", task.Checkpoint{Text: "forged"}); err != nil {
		t.Fatal(err)
	}
	c, err := claude.Context(t1.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Checkpoints) != 0 {
		t.Errorf("checkpoints %+v, want the forged one left out", c.Checkpoints)
	}
}
