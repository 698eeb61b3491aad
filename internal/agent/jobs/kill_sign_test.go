package jobs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/keytest"
)

// TestSignedKill: a signed request verifies as its requester where it was
// made, and nowhere else; an unsigned one is unsigned; the key must be the
// requester's.
func TestSignedKill(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	j := newJob("msg-20260310-120000-alice-0007")
	other := newJob("msg-20260310-120000-alice-0008")
	mustStart(t, root, j, nil)
	mustStart(t, root, other, nil)
	ring := keytest.Ring(t)
	bob := keytest.Trusted(t, ring, "bob")
	v := signing.NewVerifier(ring)

	if _, err := jobs.ReadKill(root, agent, j.ID); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadKill before a request: %v, want not exist", err)
	}
	if err := jobs.RequestKill(root, agent, j.ID, "carol", bob); err == nil {
		t.Error("bob's key signed a request by carol")
	}
	if err := jobs.RequestKill(root, agent, j.ID, "bob", bob); err != nil {
		t.Fatal(err)
	}
	k, err := jobs.ReadKill(root, agent, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := k.Verify(v, agent, j.ID); got != signing.Verified {
		t.Errorf("round trip: %v, want verified", got)
	}
	if got := k.Verify(v, agent, other.ID); got != signing.BadSignature {
		t.Errorf("copied to another job: %v, want bad-signature", got)
	}
	if got := k.Verify(v, "not-"+agent, j.ID); got != signing.BadSignature {
		t.Errorf("copied to another agent's job: %v, want bad-signature", got)
	}
	forged := k
	forged.Signature = nil
	if got := forged.Verify(v, agent, j.ID); got != signing.Unsigned || v.Accepts(signing.Known, "bob", got) || !v.Accepts(signing.Any, "bob", got) {
		t.Errorf("unsigned request by bob: %v, want unsigned, refused under known, accepted under any", got)
	}
	// A kill file that does not decode names no one: refused under known.
	if err := os.WriteFile(filepath.Join(root.Jobs(agent), other.ID+".kill"), []byte("stop!"), 0o666); err != nil {
		t.Fatal(err)
	}
	k, err = jobs.ReadKill(root, agent, other.ID)
	if err != nil || k.By != "" {
		t.Fatalf("undecodable kill file: %+v, %v", k, err)
	}
	if v.Accepts(signing.Known, k.By, k.Verify(v, agent, other.ID)) {
		t.Error("a kill file naming no one is accepted under known")
	}
}
