package task_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/task"
)

// TestBlockedByFailedDependency: a task whose dependency failed is shown
// blocked by it, not waiting for ever; retrying the dependency and
// finishing it makes the task ready.
func TestBlockedByFailedDependency(t *testing.T) {
	b := newBoard(t, tree.Root(t.TempDir()), &clock{t: t0})
	t1 := add(t, b, "write the lexer")
	t2 := add(t, b, "write the parser")
	t3 := add(t, b, "fuzz both", t1.ID, t2.ID)
	if _, err := b.Claim(t1.ID, "codex"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Fail(t1.ID, "codex", "no grammar"); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(t3.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.BlockedBy, []string{t1.ID}) || got.Ready {
		t.Errorf("blocked by %q, ready %v; want [t1], false", got.BlockedBy, got.Ready)
	}
	if s := got.State(nil); s != "pending, blocked by failed t1; waits for t2" {
		t.Errorf("state %q", s)
	}
	if _, err := b.Claim(t3.ID, "claude"); !errors.Is(err, task.ErrNotReady) || !strings.Contains(err.Error(), "blocked by failed t1") {
		t.Errorf("claim of a blocked task: %v", err)
	}
	tasks, _, err := b.List()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tasks[2].BlockedBy, []string{t1.ID}) {
		t.Errorf("listed blocked by %q", tasks[2].BlockedBy)
	}
	c, err := b.Context(t3.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.Text(), "state: pending, blocked by failed t1; waits for t2") || !slices.Equal(c.Task.BlockedBy, []string{t1.ID}) {
		t.Errorf("context %+v:\n%s", c.Task, c.Text())
	}
}

// TestRetry: a failed task is retried by anyone on the board: back to
// pending, ready again, its checkpoints, attempts and failure kept; only
// a failed task is retried.
func TestRetry(t *testing.T) {
	b := newBoard(t, tree.Root(t.TempDir()), &clock{t: t0})
	t1 := add(t, b, "write the lexer")
	t2 := add(t, b, "write the parser", t1.ID)
	if _, err := b.Retry(t1.ID, "lead", ""); !errors.Is(err, task.ErrNotFailed) {
		t.Fatalf("retry of a pending task: %v, want ErrNotFailed", err)
	}
	if _, err := b.Claim(t1.ID, "codex"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Record(t1.ID, "codex", task.Checkpoint{Text: "tokens done"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Fail(t1.ID, "codex", "no grammar"); err != nil {
		t.Fatal(err)
	}
	got, err := b.Retry(t1.ID, "lead", "the grammar is in docs/ now")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != task.Pending || !got.Ready || got.Attempts != 1 || got.LastError != "no grammar" || got.Error != "" {
		t.Errorf("after retry %+v", got)
	}
	if _, err := b.Retry(t1.ID, "lead", ""); !errors.Is(err, task.ErrNotFailed) {
		t.Errorf("second retry: %v, want ErrNotFailed", err)
	}
	if got, err = b.Claim(t1.ID, "claude"); err != nil || got.Attempts != 2 {
		t.Fatalf("claim after retry: %+v, %v", got, err)
	}
	c, err := b.Context(t1.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Checkpoints) != 1 || c.Checkpoints[0].Text != "tokens done" || c.Task.Attempts != 2 ||
		!strings.Contains(c.Text(), "The previous attempt failed\nno grammar") {
		t.Errorf("context after retry %+v:\n%s", c, c.Text())
	}
	if _, err := b.Finish(t1.ID, "claude", "done"); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(t2.ID); err != nil || !got.Ready {
		t.Errorf("t2 after t1 retried and done: %+v, %v", got, err)
	}
	_, evs, err := b.Events(t1.ID)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Event)
	}
	if want := []string{"claimed", "checkpoint", "failed", "retried", "claimed", "done"}; !slices.Equal(kinds, want) {
		t.Errorf("events %q, want %q", kinds, want)
	}
	if evs[3].Agent != "lead" || evs[3].Note != "the grammar is in docs/ now" {
		t.Errorf("retry event %+v", evs[3])
	}
}

// TestRetrySignedAndApplied: a retry is signed like the other events,
// and one made and signed elsewhere is published by ApplySigned; a
// forged one is refused.
func TestRetrySignedAndApplied(t *testing.T) {
	keys, v := keyed(t, "lead")
	b := newBoard(t, tree.Root(t.TempDir()), &clock{t: t0})
	lead := keys["lead"]
	b.Verifier = v
	t1 := add(t, b, "write the lexer")
	for _, step := range []func() error{
		func() error { _, err := b.Claim(t1.ID, "codex"); return err },
		func() error { _, err := b.Fail(t1.ID, "codex", "no grammar"); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := b.Prepare(t1.ID)
	if err != nil {
		t.Fatal(err)
	}
	e, err := task.OwnEvent(task.EvRetried, "lead", "again", task.Checkpoint{})
	if err != nil {
		t.Fatal(err)
	}
	e.Seq, e.Time, e.Host = cur.Events+1, t0, "laptop"
	forged := e
	forged.Note = "changed"
	if err := e.Sign(lead, "dev", t1.ID); err != nil {
		t.Fatal(err)
	}
	forged.Signature = e.Signature
	if _, err := b.ApplySigned(t1.ID, forged); !errors.Is(err, task.ErrForged) {
		t.Errorf("forged retry: %v, want ErrForged", err)
	}
	got, err := b.ApplySigned(t1.ID, e)
	if err != nil || got.Status != task.Pending {
		t.Fatalf("signed retry: %+v, %v", got, err)
	}
	_, evs, err := b.Events(t1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v := evs[len(evs)-1].Verdict; v != signing.Verified {
		t.Errorf("retry's verdict %s", v)
	}
}

// TestDetail: checkpoints and done carry a structured detail (a JSON
// object), kept canonical, signed, shown by the context; anything else
// is ErrInvalid.
func TestDetail(t *testing.T) {
	keys, v := keyed(t, "codex")
	b := newBoard(t, tree.Root(t.TempDir()), &clock{t: t0})
	b.Signer, b.Verifier = keys["codex"], v
	t1 := add(t, b, "set up auth")
	if _, err := b.Claim(t1.ID, "codex"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`[1]`, `"x"`, `null`, `{"a":1} {}`, `{`, `{"a":"` + strings.Repeat("x", task.MaxDetail) + `"}`} {
		if _, err := task.ParseDetail([]byte(bad)); !errors.Is(err, task.ErrInvalid) {
			t.Errorf("detail %.20s: %v, want ErrInvalid", bad, err)
		}
	}
	huge := task.Detail{"a": strings.Repeat("x", task.MaxDetail)}
	if _, err := b.Record(t1.ID, "codex", task.Checkpoint{Text: "x", Detail: huge}); !errors.Is(err, task.ErrInvalid) {
		t.Errorf("a detail too long: %v, want ErrInvalid", err)
	}
	if _, err := b.Fail(t1.ID, "codex", ""); err == nil {
		t.Fatal("an empty error was taken")
	}
	if _, err := b.Record(t1.ID, "codex", task.Checkpoint{Type: task.CkDecision, Text: "JWT over cookies",
		Detail: detail(t, ` { "reason" : "API-first", "<b>": 1.50 } `)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Finish(t1.ID, "codex", "OAuth works"); err != nil {
		t.Fatal(err)
	}
	_, evs, err := b.Events(t1.ID)
	if err != nil {
		t.Fatal(err)
	}
	cp := evs[1]
	if want := `{"\u003cb\u003e":1.50,"reason":"API-first"}`; cp.Detail.String() != want {
		t.Errorf("detail %s, want %s", cp.Detail, want)
	}
	if cp.Verdict != signing.Verified {
		t.Errorf("checkpoint with detail: verdict %s", cp.Verdict)
	}
	c, err := b.Context(t1.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Checkpoints) != 1 || c.Checkpoints[0].Detail.String() != `{"\u003cb\u003e":1.50,"reason":"API-first"}` ||
		!strings.Contains(c.Text(), `  detail: {"\u003cb\u003e":1.50,"reason":"API-first"}`) {
		t.Errorf("context %+v:\n%s", c.Checkpoints, c.Text())
	}

	// An outcome detail on done, shown to the dependent task too.
	t3 := add(t, b, "document auth")
	if _, err := b.Claim(t3.ID, "codex"); err != nil {
		t.Fatal(err)
	}
	done, err := b.FinishDetail(t3.ID, "codex", "written", detail(t, `{"files_created":["docs/auth.md"]}`))
	if err != nil || done.OutcomeDetail.String() != `{"files_created":["docs/auth.md"]}` {
		t.Fatalf("done with detail: %+v, %v", done, err)
	}
	c, err = b.Context(t3.ID, 0)
	if err != nil || !strings.Contains(c.Text(), "## Outcome\nwritten\ndetail: {\"files_created\":[\"docs/auth.md\"]}") {
		t.Errorf("context of done %v:\n%s", err, c.Text())
	}
	t5 := add(t, b, "use auth", t3.ID)
	if c, err := b.Context(t5.ID, 0); err != nil || !strings.Contains(c.Text(), "- "+t3.ID+" (done): document auth\n  outcome: written\n  detail: {") {
		t.Errorf("dependent's context %v:\n%s", err, c.Text())
	}
	// A detail too long for the budget is left out, said so.
	t4 := add(t, b, "big")
	if _, err := b.Claim(t4.ID, "codex"); err != nil {
		t.Fatal(err)
	}
	big := `{"log":"` + strings.Repeat("y", 2000) + `"}`
	if _, err := b.Record(t4.ID, "codex", task.Checkpoint{Text: "noisy", Detail: detail(t, big)}); err != nil {
		t.Fatal(err)
	}
	c, err = b.Context(t4.ID, 500)
	if err != nil || !c.Cut || len(c.Checkpoints) != 1 || c.Checkpoints[0].Detail != nil || !c.Checkpoints[0].DetailCut ||
		!strings.Contains(c.Text(), "detail: [left out to fit]") {
		t.Errorf("cut context %v %+v:\n%s", err, c.Checkpoints, c.Text())
	}
}

// TestClaimedBy: an agent's claimed tasks, each with the newest
// checkpoint of its current claim; done and others' tasks are not.
func TestClaimedBy(t *testing.T) {
	b := newBoard(t, tree.Root(t.TempDir()), &clock{t: t0})
	t1, t2, t3, t4 := add(t, b, "one"), add(t, b, "two"), add(t, b, "three"), add(t, b, "four")
	for _, c := range []struct{ id, agent string }{{t1.ID, "codex"}, {t2.ID, "codex"}, {t3.ID, "claude"}, {t4.ID, "codex"}} {
		if _, err := b.Claim(c.id, c.agent); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"first", "second"} {
		if _, err := b.Record(t1.ID, "codex", task.Checkpoint{Type: task.CkProgress, Text: s, Files: []string{"a.go"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Finish(t4.ID, "codex", "ok"); err != nil {
		t.Fatal(err)
	}
	got, err := b.ClaimedBy("codex", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Task.ID != t1.ID || got[0].Checkpoint.Summary != "second" || got[1].Task.ID != t2.ID || got[1].Checkpoint.Seq != 0 {
		t.Errorf("claimed by codex: %+v", got)
	}
	if got, err := b.ClaimedBy("codex", 1); err != nil || len(got) != 1 {
		t.Errorf("at most 1: %+v, %v", got, err)
	}
	empty, err := task.New(tree.Root(t.TempDir()), "dev")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := empty.ClaimedBy("codex", 0); err != nil || len(got) != 0 {
		t.Errorf("no board: %+v, %v", got, err)
	}
}

func detail(t *testing.T, s string) task.Detail {
	t.Helper()
	d, err := task.ParseDetail([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// keyed returns a signer for each of names and a verifier that knows
// their keys.
func keyed(t *testing.T, names ...string) (map[string]*signing.Signer, *signing.Verifier) {
	t.Helper()
	ring := keyring.Open(filepath.Join(t.TempDir(), "keys"))
	keys := map[string]*signing.Signer{}
	for _, n := range names {
		key, err := signing.NewKey(filepath.Join(t.TempDir(), n+".key"), n, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := ring.Trust(n, key.PublicKey()); err != nil {
			t.Fatal(err)
		}
		keys[n] = key
	}
	return keys, signing.NewVerifier(ring)
}
