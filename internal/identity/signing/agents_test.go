package signing_test

import (
	"crypto/ed25519"
	"path/filepath"
	"slices"
	"testing"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
)

func TestAgents(t *testing.T) {
	ring := keyring.Open(filepath.Join(t.TempDir(), "keys"))
	for _, a := range []string{"codex", "alice"} {
		pub, _, err := ed25519.GenerateKey(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := ring.Trust(a, keyring.FormatPublic(pub)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := signing.NewVerifier(ring).Agents(), []string{"alice", "codex"}; !slices.Equal(got, want) {
		t.Errorf("Agents() = %q, want %q", got, want)
	}
	var none *signing.Verifier
	if got := none.Agents(); got != nil {
		t.Errorf("a nil Verifier's Agents() = %q, want none", got)
	}
}
