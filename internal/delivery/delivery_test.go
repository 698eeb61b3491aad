package delivery

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
)

func TestAddressees(t *testing.T) {
	known := func(a string) bool { return a == "bob" || a == "carol" || a == "dave" }
	for _, c := range []struct {
		name, to, text string
		want           []string
	}{
		{"to", "bob", "hi", []string{"bob"}},
		{"to and mentions", "bob", "hi @carol and @Dave, and @bob again", []string{"bob", "carol", "dave"}},
		{"unknown mention", "all", "ping @zed", []string{"zed"}},
		{"first word known", "all", "carol: look at this", []string{"carol"}},
		{"first word unknown", "all", "Hello there", nil},
		{"broadcast", "all", "hello everyone", nil},
		{"not the sender", "all", "@alice note to self", nil},
		{"email is no mention", "all", "mail bob@example.com", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := channel.Message{From: "alice", To: c.to, Content: channel.Content{Text: c.text}}
			if got := Addressees(&m, known); !slices.Equal(got, c.want) {
				t.Errorf("Addressees = %v, want %v", got, c.want)
			}
		})
	}
}

func TestParseRefusal(t *testing.T) {
	if g, why, ok := ParseRefusal(RefusalNote(GuardMaxHops, "the thread reached the hop limit (3)")); !ok || g != GuardMaxHops || why != "the thread reached the hop limit (3)" {
		t.Errorf("round trip: %q %q %v", g, why, ok)
	}
	if _, _, ok := ParseRefusal("the model answered NO_REPLY"); ok {
		t.Errorf("a note of no guard parsed as a refusal")
	}
}

// TestSeenFile: the first seen file stays; a signed one verifies, and a
// forged one of an agent with keys is not believed by status.
func TestSeenFile(t *testing.T) {
	root := tree.Root(t.TempDir())
	key, err := signing.NewKey(filepath.Join(t.TempDir(), "bob.key"), "bob", false)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(filepath.Join(t.TempDir(), "keys"))
	if err := ring.Trust("bob", key.PublicKey()); err != nil {
		t.Fatal(err)
	}
	v := signing.NewVerifier(ring)
	m := channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: "hi"}}
	if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
		t.Fatal(err)
	}
	owner := claim.Owner{Agent: "bob", Host: "vm-1", PID: 42, Instance: "i1"}
	now := time.Now()
	if err := MarkSeen(root, "dev", m.ID, owner, now, GuardTrust, "unsigned", key); err != nil {
		t.Fatal(err)
	}
	if err := MarkSeen(root, "dev", m.ID, owner, now.Add(time.Second), "", "", key); err != nil {
		t.Fatalf("a second MarkSeen: %v", err)
	}
	s, err := ReadSeen(root, "dev", "bob", m.ID)
	if err != nil || s.Guard != GuardTrust || s.Verify(v, "dev", "bob", m.ID) != signing.Verified {
		t.Fatalf("seen file %+v, %v; want the first, verified", s, err)
	}
	st, err := Of(root, "dev", m.ID, Options{Verifier: v})
	if err != nil || len(st.Addressees) != 1 || st.Addressees[0].State != Refused || st.Addressees[0].Guard != GuardTrust {
		t.Fatalf("status %+v, %v; want refused by trust", st, err)
	}
	if ch, err := FindChannel(root, m.ID); err != nil || ch != "dev" {
		t.Errorf("FindChannel = %q, %v", ch, err)
	}

	// A forged seen file (unsigned, bob has keys) is not believed.
	path := filepath.Join(root.AgentClaims("dev", "bob"), m.ID+".seen")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := MarkSeen(root, "dev", m.ID, owner, now, GuardTrust, "forged", nil); err != nil {
		t.Fatal(err)
	}
	st, _ = Of(root, "dev", m.ID, Options{Verifier: v})
	if a := st.Addressees[0]; a.State != Undeliverable {
		t.Errorf("with a forged seen file: %+v, want it ignored (bob unknown: undeliverable)", a)
	}
}

// TestAddresseesInstanceAlias: in a workflow instance's channel "@reviewer"
// (and to: reviewer, a first line "reviewer …") is for reviewer--I, so
// status lists it; in another channel the same mention names the agent
// "reviewer", not the instance's.
func TestAddresseesInstanceAlias(t *testing.T) {
	root := tree.Root(t.TempDir())
	rec := workflow.Record{Name: "review", Instance: "i1", Status: workflow.Running, Started: time.Now(),
		Agents: []string{"reviewer--i1", "coder--i1"}, Channel: "review--i1"}
	if err := workflow.WriteRecord(root, &rec); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, ch, to, text string
		want               []string
	}{
		{"mention", "review--i1", "all", "diff\n@reviewer please review", []string{"reviewer--i1"}},
		{"to", "review--i1", "coder", "fix it", []string{"coder--i1"}},
		{"first word", "review--i1", "all", "Coder: fix it", []string{"coder--i1"}},
		{"id too", "review--i1", "all", "@reviewer--i1 and @reviewer", []string{"reviewer--i1"}},
		{"other channel", "dev", "all", "@reviewer please review", []string{"reviewer"}},
		{"other channel, first word", "dev", "all", "Coder: fix it", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := channel.Message{SessionID: c.ch, From: "human", To: c.to, Content: channel.Content{Text: c.text}}
			if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
				t.Fatal(err)
			}
			st, err := Of(root, c.ch, m.ID, Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range st.Addressees {
				got = append(got, a.Agent)
			}
			if !slices.Equal(got, c.want) || st.Broadcast != (c.want == nil) {
				t.Errorf("addressees %v (broadcast %v), want %v", got, st.Broadcast, c.want)
			}
		})
	}
}

// TestJoinedMarks: a joined session's marks make a message offered, then
// read; a claim replied makes it answered; a forged mark (unsigned, the
// agent has keys) is not believed, and an offered mark with a different
// kind's signature does not verify.
func TestJoinedMarks(t *testing.T) {
	root := tree.Root(t.TempDir())
	key, err := signing.NewKey(filepath.Join(t.TempDir(), "ana.key"), "ana", false)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(filepath.Join(t.TempDir(), "keys"))
	if err := ring.Trust("ana", key.PublicKey()); err != nil {
		t.Fatal(err)
	}
	v := signing.NewVerifier(ring)
	m := channel.Message{SessionID: "dev", From: "bob", To: "ana", Content: channel.Content{Text: "the API changed"}}
	if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
		t.Fatal(err)
	}
	owner := claim.Owner{Agent: "ana", Host: "vm-1", PID: 42, Instance: "i1"}
	state := func() string {
		st, err := Of(root, "dev", m.ID, Options{Verifier: v})
		if err != nil || len(st.Addressees) != 1 {
			t.Fatalf("status %+v, %v", st, err)
		}
		return st.Addressees[0].State
	}
	if err := MarkSeen(root, "dev", m.ID, owner, time.Now(), "", "", key); err != nil {
		t.Fatal(err)
	}
	if err := Mark(root, KindOffered, "dev", m.ID, owner, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != Seen {
		t.Errorf("with a forged offered mark: %s, want seen", s)
	}
	os.Remove(filepath.Join(root.AgentClaims("dev", "ana"), m.ID+".offered"))
	if err := Mark(root, KindOffered, "dev", m.ID, owner, time.Now(), key); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != Offered {
		t.Errorf("offered: %s", s)
	}
	// A read mark copied from the offered one: its signature is an offered one's.
	data, _ := os.ReadFile(filepath.Join(root.AgentClaims("dev", "ana"), m.ID+".offered"))
	os.WriteFile(filepath.Join(root.AgentClaims("dev", "ana"), m.ID+".read"), data, 0o644)
	if s := state(); s != Offered {
		t.Errorf("with an offered mark renamed read: %s, want offered", s)
	}
	os.Remove(filepath.Join(root.AgentClaims("dev", "ana"), m.ID+".read"))
	if err := Mark(root, KindRead, "dev", m.ID, owner, time.Now(), key); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != Read {
		t.Errorf("read: %s", s)
	}
	if err := Mark(root, "seen", "dev", m.ID, owner, time.Now(), key); err == nil {
		t.Error("Mark of kind seen: want an error (MarkSeen writes those)")
	}
	store := &claim.Store{Root: root, Self: owner, Signer: key}
	if _, _, err := store.Acquire("dev", m.ID); err != nil {
		t.Fatal(err)
	}
	reply := channel.Message{SessionID: "dev", From: "ana", To: "bob", Content: channel.Content{Text: "thanks"}, Metadata: channel.Metadata{InReplyTo: m.ID}}
	if err := (&channel.Writer{Root: root, Signer: key}).Post(&reply); err != nil {
		t.Fatal(err)
	}
	if err := store.Finish("dev", m.ID, claim.Replied, reply.ID, ""); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != Answered {
		t.Errorf("answered: %s", s)
	}
}
