package task_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/task"
	"github.com/collabdev/collab/presence"
)

// signedBoards returns boards of one channel for codex (signing with its
// key), for a forger with no key, and for claude, all judging with trust;
// codex has a key in the keyring, claude none.
func signedBoards(t *testing.T, trust signing.Policy) (codex, forger, claude *task.Board) {
	t.Helper()
	root := tree.Root(t.TempDir())
	key, err := signing.NewKey(filepath.Join(t.TempDir(), "codex.key"), "codex", false)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(filepath.Join(t.TempDir(), "keys"))
	if err := ring.Trust("codex", key.PublicKey()); err != nil {
		t.Fatal(err)
	}
	v := signing.NewVerifier(ring)
	clk := &clock{t: t0}
	codex, forger, claude = newBoard(t, root, clk), newBoard(t, root, clk), newBoard(t, root, clk)
	for _, b := range []*task.Board{codex, forger, claude} {
		b.Verifier, b.Trust = v, trust
	}
	codex.Signer = key
	return codex, forger, claude
}

// TestForgedTaskClaim: a claim in codex's name that codex did not sign is
// not codex's claim under known (claude may claim the task), and is under
// any; codex's signed claim is.
func TestForgedTaskClaim(t *testing.T) {
	for _, c := range []struct {
		name       string
		trust      signing.Policy
		signed     bool
		claudeWins bool
	}{
		{"forged under known", signing.Known, false, true},
		{"forged under any", signing.Any, false, false},
		{"signed under known", signing.Known, true, false},
		{"signed under signed", signing.Signed, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			codex, forger, claude := signedBoards(t, c.trust)
			t1 := add(t, codex, "write the parser")
			by := forger
			if c.signed {
				by = codex
			}
			if _, err := by.Claim(t1.ID, "codex"); err != nil {
				t.Fatal(err)
			}
			got, err := claude.Claim(t1.ID, "claude")
			var ce *task.ClaimedError
			if c.claudeWins {
				if err != nil || got.Owner != "claude" || got.Unverified != 1 {
					t.Fatalf("claude's claim: %+v, %v; want claude's, one unverified event", got, err)
				}
				_, evs, err := claude.Events(t1.ID)
				if err != nil || len(evs) != 2 || !evs[0].Ignored || evs[0].Verdict != signing.Unsigned || evs[1].Ignored {
					t.Errorf("events %+v, %v; want the forged claim ignored", evs, err)
				}
				if _, err := codex.Finish(t1.ID, "codex", "done"); !errors.Is(err, task.ErrNotOwner) {
					t.Errorf("codex finishing claude's task: %v, want ErrNotOwner", err)
				}
				return
			}
			if !errors.As(err, &ce) || ce.Owner != "codex" {
				t.Fatalf("claude's claim: %v, want claimed by codex", err)
			}
		})
	}
}

// TestSignedTaskEvents: codex's events verify where made; an event file
// copied to another task does not.
func TestSignedTaskEvents(t *testing.T) {
	codex, _, claude := signedBoards(t, signing.Known)
	t1 := add(t, codex, "one")
	t2 := add(t, codex, "two")
	if _, err := codex.Claim(t1.ID, "codex"); err != nil {
		t.Fatal(err)
	}
	if _, err := codex.Checkpoint(t1.ID, "codex", "half way"); err != nil {
		t.Fatal(err)
	}
	got, evs, err := claude.Events(t1.ID)
	if err != nil || got.Owner != "codex" || got.Unverified != 0 {
		t.Fatalf("task %+v, %v", got, err)
	}
	for _, e := range evs {
		if e.Verdict != signing.Verified || e.Ignored {
			t.Errorf("event %d: %v ignored %v, want verified", e.Seq, e.Verdict, e.Ignored)
		}
	}
	dir := codex.Root.Tasks("dev")
	data, err := os.ReadFile(filepath.Join(dir, t1.ID, "000001.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, t2.ID), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, t2.ID, "000001.json"), data, 0o666); err != nil {
		t.Fatal(err)
	}
	got, evs, err = claude.Events(t2.ID)
	if err != nil || got.Status != task.Pending || len(evs) != 1 || evs[0].Verdict != signing.BadSignature || !evs[0].Ignored {
		t.Errorf("copied claim: task %+v events %+v, %v; want pending, the event a bad signature, ignored", got, evs, err)
	}
}

// TestForgedPresenceNoSignOfLife: a fresh heartbeat in the name of codex,
// who has keys, that codex did not sign does not keep its claim alive
// under known; under any it does.
func TestForgedPresenceNoSignOfLife(t *testing.T) {
	for _, c := range []struct {
		trust    signing.Policy
		released bool
	}{{signing.Known, true}, {signing.Any, false}} {
		t.Run(string(c.trust), func(t *testing.T) {
			codex, _, claude := signedBoards(t, c.trust)
			t1 := add(t, codex, "job")
			if _, err := codex.Claim(t1.ID, "codex"); err != nil {
				t.Fatal(err)
			}
			clk := &clock{t: t0.Add(task.DefaultGrace + time.Minute)}
			claude.Now = clk.Now
			s := presence.Status{AgentID: "codex", Timestamp: presence.FormatTime(clk.Now()), State: presence.StateAwake, Host: "elsewhere"}
			if err := presence.Write(claude.Root, s); err != nil {
				t.Fatal(err)
			}
			got, err := claude.Claim(t1.ID, "claude")
			if c.released != (err == nil && got.Owner == "claude") {
				t.Errorf("claude's claim: %+v, %v; want released: %v", got, err, c.released)
			}
		})
	}
}
