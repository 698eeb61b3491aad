package task_test

import (
	"errors"
	"testing"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/workspace/task"
)

// TestRecordWorktree: the owner records its worktree and branch, signed;
// the task stays claimed and shows them; another agent cannot, and a
// relative path or an empty branch is refused.
func TestRecordWorktree(t *testing.T) {
	codex, _, claude := signedBoards(t, signing.Known)
	t1 := add(t, codex, "write the parser")
	if _, err := codex.RecordWorktree(t1.ID, "codex", "/src/wt/parser", "write-the-parser"); !errors.Is(err, task.ErrNotOwner) {
		t.Fatalf("worktree on a pending task: %v, want ErrNotOwner", err)
	}
	if _, err := codex.Claim(t1.ID, "codex"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path, branch string }{
		{"relative", "wt/parser", "b"},
		{"no branch", "/src/wt", ""},
		{"line break", "/src/wt\n", "b"},
	} {
		if _, err := codex.RecordWorktree(t1.ID, "codex", c.path, c.branch); !errors.Is(err, task.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", c.name, err)
		}
	}
	if _, err := claude.RecordWorktree(t1.ID, "claude", "/src/wt/x", "x"); !errors.Is(err, task.ErrNotOwner) {
		t.Errorf("claude on codex's task: %v, want ErrNotOwner", err)
	}
	got, err := codex.RecordWorktree(t1.ID, "codex", "/src/wt/parser", "write-the-parser")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != task.Claimed || got.Owner != "codex" || got.Worktree != "/src/wt/parser" || got.Branch != "write-the-parser" || got.WorktreeHost != codex.Host {
		t.Fatalf("after worktree: %+v", got)
	}
	read, evs, err := claude.Events(t1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if read.Worktree != "/src/wt/parser" || len(evs) != 2 || evs[1].Verdict != signing.Verified {
		t.Fatalf("read back %+v, events %+v", read, evs)
	}
	for _, change := range []func(e *task.Event){
		func(e *task.Event) { e.Worktree = "/elsewhere" },
		func(e *task.Event) { e.Branch = "main" },
	} {
		e := evs[1]
		change(&e)
		if v := e.Verify(claude.Verifier, "dev", t1.ID); v != signing.BadSignature {
			t.Errorf("changed %+v: %s, want bad-signature", e, v)
		}
	}
	done, err := codex.Finish(t1.ID, "codex", "merged")
	if err != nil || done.Worktree != "/src/wt/parser" {
		t.Errorf("done: %+v, %v; want the worktree kept in the state", done, err)
	}
}

// TestDecodeWorktreeFields: worktree and branch belong to a worktree event
// only, which must have both.
func TestDecodeWorktreeFields(t *testing.T) {
	base := `"seq":1,"status":"claimed","owner":"codex","agent":"codex","time":"2026-01-11T16:00:00Z"`
	for _, c := range []struct {
		name, extra string
		ok          bool
	}{
		{"worktree", `"event":"worktree","worktree":"/src/wt","branch":"b"`, true},
		{"no branch", `"event":"worktree","worktree":"/src/wt"`, false},
		{"relative", `"event":"worktree","worktree":"wt","branch":"b"`, false},
		{"worktree on a claim", `"event":"claimed","worktree":"/src/wt","branch":"b"`, false},
		{"branch on a checkpoint", `"event":"checkpoint","summary":"x","branch":"b"`, false},
	} {
		_, err := task.DecodeEvent([]byte("{"+base+","+c.extra+"}"), 1)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
		}
	}
}
