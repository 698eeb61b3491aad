package workflow

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestAgentIDRoundTrip(t *testing.T) {
	for _, tt := range []struct{ name, instance, id string }{
		{"reviewer", "pr-123", "reviewer--pr-123"},
		{"a", "b", "a--b"},
		{"co-der_2", "1124-2317-ab12", "co-der_2--1124-2317-ab12"},
		{"_x", "_y", "_x--_y"},
	} {
		id, err := AgentID(tt.name, tt.instance)
		if err != nil || id != tt.id {
			t.Errorf("AgentID(%q, %q) = %q, %v; want %q", tt.name, tt.instance, id, err, tt.id)
			continue
		}
		if err := tree.CheckName("agent", id); err != nil {
			t.Errorf("%q: %v", id, err)
		}
		n, i, ok := SplitAgentID(id)
		if !ok || n != tt.name || i != tt.instance {
			t.Errorf("SplitAgentID(%q) = %q, %q, %v", id, n, i, ok)
		}
		if got, err := ParseAddress(tt.name + "@" + tt.instance); err != nil || got != id {
			t.Errorf("ParseAddress(%s@%s) = %q, %v", tt.name, tt.instance, got, err)
		}
	}
}

func TestAgentIDRefusals(t *testing.T) {
	long := strings.Repeat("a", 40)
	for _, tt := range [][2]string{
		{"", "x"}, {"x", ""}, {"a--b", "x"}, {"x", "a--b"}, {"-a", "x"}, {"a-", "x"},
		{"x", "-a"}, {"x", "a-"}, {"a b", "x"}, {"x", "a@b"}, {"x", "a/b"}, {long, long},
	} {
		if id, err := AgentID(tt[0], tt[1]); err == nil || !errors.Is(err, tree.ErrBadName) {
			t.Errorf("AgentID(%q, %q) = %q, %v; want a tree.ErrBadName", tt[0], tt[1], id, err)
		}
	}
}

func TestSplitAgentID(t *testing.T) {
	for _, id := range []string{"reviewer", "a--", "--b", "a---b", "a--b--c", "a--b-", "", "a-b"} {
		if n, i, ok := SplitAgentID(id); ok {
			t.Errorf("SplitAgentID(%q) = %q, %q, true; want not a workflow agent", id, n, i)
		}
	}
}

func TestParseAddress(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"reviewer", "reviewer"},
		{"reviewer--pr-1", "reviewer--pr-1"},
		{"reviewer@pr-1", "reviewer--pr-1"},
	} {
		if got, err := ParseAddress(tt.in); err != nil || got != tt.want {
			t.Errorf("ParseAddress(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "@pr-1", "reviewer@", "a@b@c", "a--b@c", "a b", "a@-x", "../x"} {
		if got, err := ParseAddress(in); err == nil {
			t.Errorf("ParseAddress(%q) = %q, nil; want an error", in, got)
		}
	}
}

func TestNewInstance(t *testing.T) {
	now := time.Date(2026, 11, 24, 23, 17, 5, 0, time.UTC)
	a, b := NewInstance(now), NewInstance(now)
	if !strings.HasPrefix(a, "1124-2317-") || len(a) != len("1124-2317-ab12") {
		t.Errorf("NewInstance = %q", a)
	}
	if err := CheckInstance(a); err != nil {
		t.Error(err)
	}
	if _, err := AgentID(strings.Repeat("n", 40), a); err != nil {
		t.Errorf("a 40-byte agent name in a default instance: %v", err)
	}
	_ = b // random suffix: equal once in 65536, so not asserted
}

func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"a@b", "a--b", "@x", "a@b@c", "", "-a@b-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseAddress(s)
		if err != nil {
			return
		}
		if err := tree.CheckName("agent", id); err != nil {
			t.Errorf("ParseAddress(%q) = %q, not a valid agent id: %v", s, id, err)
		}
		if name, inst, ok := strings.Cut(s, "@"); ok {
			n, i, ok := SplitAgentID(id)
			if !ok || n != name || i != inst {
				t.Errorf("ParseAddress(%q) = %q splits to %q, %q, %v", s, id, n, i, ok)
			}
		}
	})
}

func TestAddress(t *testing.T) {
	for id, want := range map[string]string{"coder--i1": "coder@i1", "coder": "coder", "x---y": "x---y"} {
		if got := Address(id); got != want {
			t.Errorf("Address(%q) = %q, want %q", id, got, want)
		}
		if want != id {
			if back, err := ParseAddress(want); err != nil || back != id {
				t.Errorf("ParseAddress(%q) = %q, %v", want, back, err)
			}
		}
	}
}
