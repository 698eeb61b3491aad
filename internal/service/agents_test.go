package service

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/registry"
)

// TestRegisterAgent: an agent without a watcher registers, and who and a
// message's delivery status know it (waiting, not undeliverable); it
// unregisters, and they no longer do.
func TestRegisterAgent(t *testing.T) {
	m, root := testMount(t)
	ctx := context.Background()
	w1 := Actor{Name: "w1"}
	if _, err := m.RegisterAgent(ctx, w1, AgentRegistration{}); !errkind.Is(err, errkind.Invalid) {
		t.Errorf("no runtime: %v, want Invalid", err)
	}
	if _, err := m.RegisterAgent(ctx, w1, AgentRegistration{Runtime: "x", Capabilities: []string{"a b"}}); !errkind.Is(err, errkind.Invalid) {
		t.Errorf("a bad capability: %v, want Invalid", err)
	}
	got, err := m.RegisterAgent(ctx, w1, AgentRegistration{Runtime: "claude_code", Capabilities: []string{"testing", "go", "go"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Role != "worker" || got.Host != "here" || len(got.Capabilities) != 2 || got.Signature != nil {
		t.Errorf("registered %+v", got)
	}
	rows, err := m.Who(ctx, WhoRequest{})
	if err != nil || len(rows) != 1 || rows[0].Agent != "w1" || rows[0].Reg == nil || rows[0].Reg.Runtime != "claude_code" {
		t.Fatalf("who: %+v, %v", rows, err)
	}
	id := postTo(t, root, "dev", "lead", "w1", "hello")
	if st := addressee(t, m, id); st != delivery.Waiting {
		t.Errorf("delivery to a registered agent: %s, want %s", st, delivery.Waiting)
	}
	if old, err := m.UnregisterAgent(ctx, w1); err != nil || old.Runtime != "claude_code" {
		t.Fatalf("unregister: %+v, %v", old, err)
	}
	if _, err := m.UnregisterAgent(ctx, w1); !errkind.Is(err, errkind.NotFound) {
		t.Errorf("second unregister: %v, want NotFound", err)
	}
	if rows, err := m.Who(ctx, WhoRequest{}); err != nil || len(rows) != 0 {
		t.Errorf("who after unregister: %+v, %v", rows, err)
	}
	if st := addressee(t, m, id); st != delivery.Undeliverable {
		t.Errorf("delivery after unregister: %s, want %s", st, delivery.Undeliverable)
	}
}

func addressee(t *testing.T, m *Mount, id string) string {
	t.Helper()
	st, err := m.Status(context.Background(), StatusRequest{Channel: "dev", ID: id})
	if err != nil || len(st.Addressees) != 1 {
		t.Fatalf("status: %+v, %v", st, err)
	}
	return st.Addressees[0].State
}

// TestRegisterAgentSigned: an agent with keys registers with its key (its
// entry verifies), is Forbidden without it or with another's, and only
// its key removes the entry; a signed entry of an agent without keys
// only the key that signed it.
func TestRegisterAgentSigned(t *testing.T) {
	root := tree.Root(t.TempDir())
	ring := keyring.Open(filepath.Join(t.TempDir(), "keys"))
	key := func(name string) *signing.Signer {
		k, err := signing.NewKey(filepath.Join(t.TempDir(), name+".key"), name, false)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	w1, w1b, w2, w2b := key("w1"), key("w1"), key("w2"), key("w2")
	if err := ring.Trust("w1", w1.PublicKey()); err != nil {
		t.Fatal(err)
	}
	v := signing.NewVerifier(ring)
	m := NewMount(Config{Root: root, Host: "here", Verifier: v})
	ctx := context.Background()
	reg := AgentRegistration{Runtime: "codex", Role: "reviewer"}
	for _, a := range []Actor{{Name: "w1"}, {Name: "w1", Signer: w2}} {
		if _, err := m.RegisterAgent(ctx, a, reg); !errkind.Is(err, errkind.Forbidden) {
			t.Errorf("register w1 with %v: %v, want Forbidden", a.Signer, err)
		}
	}
	got, err := m.RegisterAgent(ctx, Actor{Name: "w1", Signer: w1}, reg)
	if err != nil {
		t.Fatal(err)
	}
	read, err := registry.Read(root, "w1")
	if err != nil || read.Verify(v) != signing.Verified || read.Role != got.Role {
		t.Fatalf("entry %+v (%v), verdict %s", read, err, read.Verify(v))
	}
	for _, a := range []Actor{{Name: "w1"}, {Name: "w1", Signer: w1b}} {
		if _, err := m.UnregisterAgent(ctx, a); !errkind.Is(err, errkind.Forbidden) {
			t.Errorf("unregister w1 with %v: %v, want Forbidden", a.Signer, err)
		}
	}
	if _, err := m.UnregisterAgent(ctx, Actor{Name: "w1", Signer: w1}); err != nil {
		t.Errorf("unregister w1 with its key: %v", err)
	}
	// w2 has no keys in the keyring: its signed entry is removed only with
	// the key that signed it.
	if _, err := m.RegisterAgent(ctx, Actor{Name: "w2", Signer: w2}, reg); err != nil {
		t.Fatal(err)
	}
	for _, a := range []Actor{{Name: "w2"}, {Name: "w2", Signer: w2b}} {
		if _, err := m.UnregisterAgent(ctx, a); !errkind.Is(err, errkind.Forbidden) {
			t.Errorf("unregister w2 with %v: %v, want Forbidden", a.Signer, err)
		}
	}
	if _, err := m.UnregisterAgent(ctx, Actor{Name: "w2", Signer: w2}); err != nil {
		t.Errorf("unregister w2 with its key: %v", err)
	}
}
