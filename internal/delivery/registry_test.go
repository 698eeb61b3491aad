package delivery

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/registry"
)

// TestForgedRegistryEntry: mallory writes a registry entry in bob's name
// (bob has keys); who marks it, and a message to bob stays undeliverable
// rather than waiting. bob's own signed entry is believed, and an entry of
// an agent without keys is taken at its word.
func TestForgedRegistryEntry(t *testing.T) {
	root := tree.Root(t.TempDir())
	keys := t.TempDir()
	ring := keyring.Open(filepath.Join(keys, "ring"))
	signer := map[string]*signing.Signer{}
	for _, id := range []string{"bob", "mallory"} {
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
	register := func(id string, by *signing.Signer) {
		t.Helper()
		a := registry.Agent{ID: id, Role: "reviewer", Host: "vm-9", Registered: time.Now().UTC().Format(time.RFC3339Nano)}
		if by != nil {
			a.Signature = by.Sign(a.Payload())
		}
		if err := registry.Write(root, a); err != nil {
			t.Fatal(err)
		}
	}
	post := func(to string) *channel.Message {
		t.Helper()
		m := channel.Message{SessionID: "dev", From: "alice", To: to, Content: channel.Content{Text: "review this"}}
		if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
			t.Fatal(err)
		}
		return &m
	}
	register("bob", signer["mallory"]) // forged: mallory's key in bob's name
	register("carol", nil)             // no keys: taken at its word

	rows, err := Who(root, nil, time.Now(), time.Minute, "", func(msg string) { t.Errorf("warning: %s", msg) })
	if err != nil {
		t.Fatal(err)
	}
	VerifyRows(v, rows)
	byAgent := map[string]AgentRow{}
	for _, r := range rows {
		byAgent[r.Agent] = r
	}
	if r := byAgent["bob"]; !r.Marked || !r.RegMarked || r.Verdict != signing.UnknownKey {
		t.Errorf("bob's forged entry: marked %v (registry %v), verdict %s; want marked, unknown-key", r.Marked, r.RegMarked, r.Verdict)
	}
	if r := byAgent["carol"]; r.Marked || r.RegMarked || r.Verdict != signing.Unsigned {
		t.Errorf("carol's unsigned entry (no keys): marked %v, verdict %s; want unmarked", r.Marked, r.Verdict)
	}
	entries := WhoEntries(rows, time.Now())
	for _, e := range entries {
		if want := e.Agent == "bob"; e.Forged != want || e.RegistryForged != want {
			t.Errorf("who --json of %s: forged %v, registry_forged %v; want %v", e.Agent, e.Forged, e.RegistryForged, want)
		}
	}

	toBob, toCarol := post("bob"), post("carol")
	opt := Options{Verifier: v}
	if a := For(root, "dev", toBob, opt).Addressees[0]; a.State != Undeliverable {
		t.Errorf("to bob with a forged entry: %s (%s), want undeliverable", a.State, a.Note)
	}
	if a := For(root, "dev", toBob, Options{}).Addressees[0]; a.State != Waiting {
		t.Errorf("to bob, nothing judged: %s, want waiting", a.State)
	}
	if a := For(root, "dev", toCarol, opt).Addressees[0]; a.State != Waiting {
		t.Errorf("to carol: %s, want waiting", a.State)
	}
	// A first line naming bob does not address him through the forgery.
	m := channel.Message{SessionID: "dev", From: "alice", To: "all", Content: channel.Content{Text: "bob: look"}}
	if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
		t.Fatal(err)
	}
	if st := For(root, "dev", &m, opt); !st.Broadcast {
		t.Errorf("addressees %+v, want none", st.Addressees)
	}

	// bob signs his own entry: believed, and the message waits.
	register("bob", signer["bob"])
	if a := For(root, "dev", toBob, opt).Addressees[0]; a.State != Waiting {
		t.Errorf("to bob with his own entry: %s (%s), want waiting", a.State, a.Note)
	}
	rows, _ = Who(root, []string{"bob"}, time.Now(), time.Minute, "", func(string) {})
	VerifyRows(v, rows)
	if len(rows) != 1 || rows[0].Marked || rows[0].Verdict != signing.Verified {
		t.Errorf("bob's own entry: %+v, want verified, unmarked", rows)
	}
}
