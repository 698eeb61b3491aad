package presence

import (
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// signedSetup returns a tree, alice's signer and a verifier trusting her key.
func signedSetup(t *testing.T) (tree.Root, *signing.Signer, *signing.Verifier) {
	t.Helper()
	alice, err := signing.NewKey(filepath.Join(t.TempDir(), "alice.key"), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(filepath.Join(t.TempDir(), "keys"))
	if err := ring.Trust("alice", alice.PublicKey()); err != nil {
		t.Fatal(err)
	}
	return tree.Root(t.TempDir()), alice, signing.NewVerifier(ring)
}

func TestSignedPresence(t *testing.T) {
	root, alice, v := signedSetup(t)
	s := Status{AgentID: "alice", Timestamp: at(0), State: StateAwake, Substate: SubWorking, WatcherPID: 7,
		Channel: "dev", Host: "vm-1", Channels: []string{"dev", "ops"}, MessageID: "msg-1", Queue: 2,
		Counters: map[string]int64{"handled": 3, "failed": 1}}
	s.Sign(alice)
	if err := Write(root, s); err != nil {
		t.Fatal(err)
	}
	got, err := Read(root, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if v := got.Verify(v, "alice"); v != signing.Verified {
		t.Fatalf("round trip: %v, want verified", v)
	}
	for _, c := range []struct {
		name  string
		agent string
		edit  func(*Status)
		want  signing.Verdict
	}{
		{"copied to bob's file", "bob", func(s *Status) { s.AgentID = "bob" }, signing.UnknownKey},
		{"read as bob's file", "bob", func(*Status) {}, signing.BadSignature},
		{"state changed", "alice", func(s *Status) { s.State = StateOffline }, signing.BadSignature},
		{"timestamp changed", "alice", func(s *Status) { s.Timestamp = at(60e9) }, signing.BadSignature},
		{"counters changed", "alice", func(s *Status) { s.Counters = map[string]int64{"handled": 4, "failed": 1} }, signing.BadSignature},
		{"forged: unsigned", "alice", func(s *Status) { s.Signature = nil }, signing.Unsigned},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := got
			f.Counters = map[string]int64{"handled": 3, "failed": 1}
			c.edit(&f)
			if g := f.Verify(v, c.agent); g != c.want {
				t.Errorf("verdict %v, want %v", g, c.want)
			}
		})
	}
	// bob's key is not alice's.
	bob, err := signing.NewKey(filepath.Join(t.TempDir(), "bob.key"), "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	forged := got
	forged.Sign(bob)
	if g := forged.Verify(v, "alice"); g != signing.UnknownKey {
		t.Errorf("alice's heartbeat signed by bob: %v, want unknown-key", g)
	}
	var unsigned Status = got
	unsigned.Sign(nil)
	if unsigned.Signature != nil {
		t.Error("a nil signer left a signature")
	}
}

func TestVerifyAll(t *testing.T) {
	_, alice, v := signedSetup(t)
	all := make([]Status, 300)
	want := make([]signing.Verdict, len(all))
	for i := range all {
		all[i] = Status{AgentID: "alice", Timestamp: at(0), State: StateAwake, Queue: i}
		if i%3 != 0 {
			all[i].Sign(alice)
			want[i] = signing.Verified
		}
	}
	got := VerifyAll(v, all)
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("heartbeat %d: %v, want %v", i, got[i], want[i])
		}
	}
}
