package task_test

import (
	"errors"
	"reflect"
	"testing"

	"collab/internal/identity/signing"
	"collab/internal/workspace/task"
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
	_, local, err := codex.Events("t1")
	if err != nil {
		t.Fatal(err)
	}
	_, remote, err := codex.Events("t2")
	if err != nil || len(remote) != 3 {
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
