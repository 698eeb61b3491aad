package task_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/workspace/task"
)

// TestApplySignedMatchesLocal: events made elsewhere with OwnEvent, signed
// and published with ApplySigned (by a board with no signer) are the
// events the local board makes for Claim, Record and Finish, and verify
// as their agent's; an unsigned one is refused and writes nothing.
func TestApplySignedMatchesLocal(t *testing.T) {
	codex, bridge, _ := signedBoards(t, signing.Known)
	key := codex.Signer
	add(t, codex, "local")
	add(t, codex, "remote")
	if _, err := codex.Claim("t1", "codex"); err != nil {
		t.Fatal(err)
	}
	if _, err := codex.Record("t1", "codex", task.Checkpoint{Type: task.CkDecision, Text: "half", Files: []string{"a.go"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := codex.Finish("t1", "codex", "done well"); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		kind, text string
		ck         task.Checkpoint
	}{{task.EvClaimed, "", task.Checkpoint{}}, {task.EvCheckpoint, "half", task.Checkpoint{Type: task.CkDecision, Files: []string{"a.go"}}}, {task.EvDone, "done well", task.Checkpoint{}}} {
		e, err := task.OwnEvent(step.kind, "codex", step.text, step.ck)
		if err != nil {
			t.Fatal(err)
		}
		cur, err := bridge.Prepare("t2")
		if err != nil {
			t.Fatal(err)
		}
		e.Seq, e.Time, e.Host = cur.Events+1, t0, "test-host"
		unsigned := e
		if _, err := bridge.ApplySigned("t2", unsigned); !errors.Is(err, task.ErrForged) {
			t.Fatalf("%s unsigned: %v", step.kind, err)
		}
		if err := e.Sign(key, "dev", "t2"); err != nil {
			t.Fatal(err)
		}
		if _, err := bridge.ApplySigned("t2", e); err != nil {
			t.Fatalf("%s: %v", step.kind, err)
		}
	}
	sameEvents(t, codex, 3)
}

// TestApplySignedWorktree: a worktree event made elsewhere with
// WorktreeEvent, signed and published with ApplySigned, is the event
// RecordWorktree makes; the bridge's board refuses one on a task its agent
// does not hold, a relative path, a path changed after signing, and
// worktree fields on another kind of event, writing nothing.
func TestApplySignedWorktree(t *testing.T) {
	codex, bridge, _ := signedBoards(t, signing.Known)
	key := codex.Signer
	for _, title := range []string{"local", "remote", "unclaimed"} {
		add(t, codex, title)
	}
	for _, id := range []string{"t1", "t2"} {
		if _, err := codex.Claim(id, "codex"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := codex.RecordWorktree("t1", "codex", "/w/proj/t-x", "t-x"); err != nil {
		t.Fatal(err)
	}
	signed := func(id, path, branch string, edit func(*task.Event)) task.Event {
		t.Helper()
		e, err := task.WorktreeEvent("codex", path, branch)
		if err != nil {
			t.Fatal(err)
		}
		cur, err := bridge.Prepare(id)
		if err != nil {
			t.Fatal(err)
		}
		e.Seq, e.Time, e.Host = cur.Events+1, t0, "test-host"
		if edit != nil {
			edit(&e)
		}
		if err := e.Sign(key, "dev", id); err != nil {
			t.Fatal(err)
		}
		return e
	}
	if _, err := task.WorktreeEvent("codex", "relative/t-x", "t-x"); !errors.Is(err, task.ErrInvalid) {
		t.Errorf("WorktreeEvent of a relative path: %v", err)
	}
	for _, c := range []struct {
		name string
		id   string
		e    task.Event
		want error
	}{
		{"a task not claimed", "t3", signed("t3", "/w/proj/t-x", "t-x", nil), task.ErrNotOwner},
		{"a relative path", "t2", signed("t2", "/w/proj/t-x", "t-x", func(e *task.Event) { e.Worktree = "w/proj/t-x" }), task.ErrInvalid},
		{"a checkpoint with a worktree", "t2", signed("t2", "/w/proj/t-x", "t-x", func(e *task.Event) {
			e.Event, e.Summary, e.Type = task.EvCheckpoint, "x", task.CkProgress
		}), task.ErrInvalid},
		{"another owner", "t2", signed("t2", "/w/proj/t-x", "t-x", func(e *task.Event) { e.Owner = "claude" }), task.ErrInvalid},
		{"a note", "t2", signed("t2", "/w/proj/t-x", "t-x", func(e *task.Event) { e.Note = "x" }), task.ErrInvalid},
	} {
		if _, err := bridge.ApplySigned(c.id, c.e); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	moved := signed("t2", "/w/proj/t-x", "t-x", nil)
	moved.Worktree = "/elsewhere" // after signing
	if _, err := bridge.ApplySigned("t2", moved); !errors.Is(err, task.ErrForged) {
		t.Errorf("a path changed after signing: %v", err)
	}
	if tk, _ := bridge.Get("t2"); tk.Events != 1 || tk.Worktree != "" {
		t.Fatalf("t2 after refusals: %+v", tk)
	}
	got, err := bridge.ApplySigned("t2", signed("t2", "/w/proj/t-x", "t-x", nil))
	if err != nil || got.Worktree != "/w/proj/t-x" || got.Branch != "t-x" || got.WorktreeHost != "test-host" || got.Owner != "codex" {
		t.Fatalf("ApplySigned worktree: %+v %v", got, err)
	}
	sameEvents(t, codex, 2)
}

// sameEvents checks that t2's events, made by signing and ApplySigned,
// are t1's, made by the board for the same agent, event for event but
// the signature, each verified; t2 has n.
func sameEvents(t *testing.T, b *task.Board, n int) {
	t.Helper()
	_, local, err := b.Events("t1")
	if err != nil {
		t.Fatal(err)
	}
	_, remote, err := b.Events("t2")
	if err != nil || len(remote) != n {
		t.Fatalf("t2: %d events, %v", len(remote), err)
	}
	for i := range local {
		if remote[i].Verdict != signing.Verified {
			t.Errorf("event %d: %s", remote[i].Seq, remote[i].Verdict)
		}
		local[i].Signature, remote[i].Signature = nil, nil
		if !reflect.DeepEqual(local[i], remote[i]) {
			t.Errorf("event %d:\nlocal  %+v\nremote %+v", i+1, local[i], remote[i])
		}
	}
}
