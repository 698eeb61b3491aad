package registry

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestKnown(t *testing.T) {
	root := tree.Root(t.TempDir())
	for _, f := range []string{filepath.Join(root.Registry(), "codex.json"), filepath.Join(root.Presence(), "claude.json")} {
		os.MkdirAll(filepath.Dir(f), 0o777)
		if err := os.WriteFile(f, []byte(`{}`), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		id   string
		want bool
	}{
		{"codex", true},  // registered
		{"claude", true}, // a heartbeat
		{"gemini", false},
	} {
		if got := Known(root, tt.id); got != tt.want {
			t.Errorf("Known(%s) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

// TestKnownTo: under a keyring, a registry entry in the name of an agent
// with keys that does not verify (unsigned, or signed by another's key)
// does not make the agent known; its own signed entry, an entry of an
// agent without keys, and a heartbeat do.
func TestKnownTo(t *testing.T) {
	root := tree.Root(t.TempDir())
	keys := t.TempDir()
	ring := keyring.Open(filepath.Join(keys, "ring"))
	signer := map[string]*signing.Signer{}
	for _, id := range []string{"w1", "w2", "mallory"} {
		k, err := signing.NewKey(filepath.Join(keys, id+".key"), id, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := ring.Trust(id, k.PublicKey()); err != nil {
			t.Fatal(err)
		}
		signer[id] = k
	}
	v := signing.NewVerifier(ring)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	write := func(a Agent, by *signing.Signer) {
		t.Helper()
		a.Registered = now
		if by != nil {
			a.Signature = by.Sign(a.Payload()) // by anyone: Sign would refuse another's key
		}
		if err := Write(root, a); err != nil {
			t.Fatal(err)
		}
	}
	write(Agent{ID: "w1", Role: "worker"}, signer["w1"])      // its own
	write(Agent{ID: "w2", Role: "worker"}, signer["mallory"]) // forged in w2's name
	write(Agent{ID: "w3", Role: "worker"}, nil)               // no keys: taken at its word
	write(Agent{ID: "mallory", Role: "lead"}, nil)            // has keys, unsigned
	os.MkdirAll(root.Registry(), 0o777)
	if err := os.WriteFile(filepath.Join(root.Registry(), "bad.json"), []byte(`{`), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		id            string
		forged, known bool
	}{
		{"w1", false, true},
		{"w2", true, false},
		{"w3", false, true},
		{"mallory", true, false},
		{"bad", false, true}, // unreadable, no keys: counts as Known says
		{"nobody", false, false},
	} {
		if a, err := Read(root, tt.id); err == nil && a.Forged(v) != tt.forged {
			t.Errorf("%s: Forged = %v, want %v", tt.id, !tt.forged, tt.forged)
		}
		if got := KnownTo(root, tt.id, v); got != tt.known {
			t.Errorf("KnownTo(%s) = %v, want %v", tt.id, got, tt.known)
		}
		if got, want := Known(root, tt.id), tt.id != "nobody"; got != want {
			t.Errorf("Known(%s) = %v, want %v (nothing judged)", tt.id, got, want)
		}
	}
	// A heartbeat makes an agent known whatever its entry.
	os.MkdirAll(root.Presence(), 0o777)
	if err := os.WriteFile(filepath.Join(root.Presence(), "w2.json"), []byte(`{}`), 0o666); err != nil {
		t.Fatal(err)
	}
	if !KnownTo(root, "w2", v) {
		t.Error("w2 with a heartbeat is not known")
	}
	if (Agent{ID: "w2"}).Forged(nil) {
		t.Error("a nil verifier judged an entry")
	}
}
