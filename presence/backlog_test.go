package presence

import (
	"testing"

	"github.com/collabdev/collab/internal/identity/signing"
)

// TestBacklogSigned: backlog and oldest_unanswered round-trip and are
// signed; a heartbeat without them signs the payload it always did, so
// heartbeats written before these fields existed still verify.
func TestBacklogSigned(t *testing.T) {
	root, alice, v := signedSetup(t)
	old := Status{AgentID: "alice", Timestamp: at(0), State: StateAwake, Substate: SubIdle, Channel: "dev", Host: "vm-1", Queue: 1}
	legacy := signing.Payload(Kind, "alice", old.Timestamp, old.State, old.Substate, "0", "dev", "vm-1", "", "", "", "", "1", "{}")
	if got := string(old.Payload("alice")); got != string(legacy) {
		t.Errorf("payload without backlog changed:\n got %q\nwant %q", got, legacy)
	}

	s := old
	s.Backlog, s.OldestUnanswered, s.Instance = 3, at(-60e9), "019ab1c2-0000-7000-8000-000000000001"
	s.Sign(alice)
	if err := Write(root, s); err != nil {
		t.Fatal(err)
	}
	got, err := Read(root, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got.Backlog != 3 || got.OldestUnanswered != s.OldestUnanswered || got.Instance != s.Instance {
		t.Errorf("read back backlog %d oldest %q, want 3 %q", got.Backlog, got.OldestUnanswered, s.OldestUnanswered)
	}
	if verdict := got.Verify(v, "alice"); verdict != signing.Verified {
		t.Errorf("verdict %v, want verified", verdict)
	}
	for name, edit := range map[string]func(*Status){
		"backlog changed":  func(s *Status) { s.Backlog = 0 },
		"oldest changed":   func(s *Status) { s.OldestUnanswered = at(0) },
		"instance changed": func(s *Status) { s.Instance = "another" },
		"instance removed": func(s *Status) { s.Instance = "" },
	} {
		f := got
		edit(&f)
		if verdict := f.Verify(v, "alice"); verdict != signing.BadSignature {
			t.Errorf("%s: verdict %v, want %v", name, verdict, signing.BadSignature)
		}
	}
}
