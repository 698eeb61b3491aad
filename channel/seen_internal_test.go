package channel

import (
	"slices"
	"testing"
	"time"
)

// TestSeenSet: names are held exactly (nothing but an added name is
// "seen"), and the message names come back from namesFrom as they went in,
// filtered by their name time.
func TestSeenSet(t *testing.T) {
	s := newSeenSet(0)
	added := []string{
		"msg-20260111-163315-claude-4c78.json",
		"msg-20260111-163315-claude-4C78.json", // hex case is part of the name
		"msg-20260111-163315-qc-1-0000.json",   // agent with a hyphen
		"msg-20260111-163316-qc-1-0000.json",
		"msg-19991231-235959-old-ffff.json",
		"msg-20261399-999999-bad-date.json", // message shape, not a valid name
		"notes.txt",
		"msg-2026.json",
	}
	for _, n := range added {
		s.add(n)
		s.add(n) // twice: no harm
	}
	for _, n := range added {
		if !s.has(n) {
			t.Errorf("has(%q) = false after add", n)
		}
	}
	for _, n := range []string{
		"msg-20260111-163315-claude-4c79.json",
		"msg-20260111-163315-claud-4c78.json",
		"msg-20260111-163314-claude-4c78.json",
		"msg-20260111-163315-qc-10000.json",
		"msg-20260111-163315-qc-1-0000.jsonx",
		"notes.txt~",
		"",
	} {
		if s.has(n) {
			t.Errorf("has(%q) = true, never added", n)
		}
	}
	got := s.namesFrom(time.Date(2026, 1, 11, 16, 33, 15, 0, time.UTC))
	slices.Sort(got)
	want := []string{
		"msg-20260111-163315-claude-4C78.json",
		"msg-20260111-163315-claude-4c78.json",
		"msg-20260111-163315-qc-1-0000.json",
		"msg-20260111-163316-qc-1-0000.json",
		"msg-20261399-999999-bad-date.json",
	}
	if !slices.Equal(got, want) {
		t.Errorf("namesFrom(16:33:15) =\n %q\nwant\n %q", got, want)
	}
	if got := s.namesFrom(time.Time{}); len(got) != 6 {
		t.Errorf("namesFrom(zero) = %q, want the 6 names of message shape", got)
	}
}

// FuzzSeenSet: whatever the name, once added it is seen, a different name
// is not, and a message name comes back unchanged.
func FuzzSeenSet(f *testing.F) {
	f.Add("msg-20260111-163315-claude-4c78.json", "msg-20260111-163315-claude-4c79.json")
	f.Add("msg-20260111-163315-qc-1-0000.json", "msg-20260111-163315-qc-10000.json")
	f.Add("x", "msg-00000000-000000-a-0000.json")
	f.Fuzz(func(t *testing.T, a, b string) {
		s := newSeenSet(0)
		s.add(a)
		if !s.has(a) {
			t.Fatalf("has(%q) = false after add", a)
		}
		if b != a && s.has(b) {
			t.Fatalf("has(%q) = true with only %q added", b, a)
		}
		if _, err := ParseName(a); err == nil {
			// Year 0000 parses; the zero time.Time is year 1.
			if got := s.namesFrom(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)); len(got) != 1 || got[0] != a {
				t.Fatalf("namesFrom = %q, want [%q]", got, a)
			}
		}
	})
}
