package sessions_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

func TestRecords(t *testing.T) {
	root := tree.Root(t.TempDir())
	if list, err := sessions.List(root); err != nil || len(list) != 0 {
		t.Fatalf("List of nothing = %v, %v", list, err)
	}
	s := &sessions.Session{ID: "ab12", Agent: "alice-ab12", DelegatedBy: "alice", Status: sessions.Starting, Created: time.Now()}
	if err := sessions.Create(root, s); err != nil {
		t.Fatal(err)
	}
	if err := sessions.Create(root, s); !errors.Is(err, sessions.ErrExists) {
		t.Fatalf("second Create: %v, want ErrExists", err)
	}
	s.Status = sessions.Running
	if err := sessions.Update(root, s); err != nil {
		t.Fatal(err)
	}
	got, err := sessions.Read(root, "ab12")
	if err != nil || got.Status != sessions.Running || got.Agent != "alice-ab12" {
		t.Fatalf("Read = %+v, %v", got, err)
	}
	if got, err := sessions.Find(root, "alice-ab12"); err != nil || got.ID != "ab12" {
		t.Fatalf("Find by agent = %+v, %v", got, err)
	}
	for _, id := range []string{"zz12", "../x", "ab1", "cd34"} {
		if _, err := sessions.Read(root, id); !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("Read(%q): %v, want ErrNotFound", id, err)
		}
	}
	if err := sessions.Delete(root, "ab12"); err != nil {
		t.Fatal(err)
	}
	if list, _ := sessions.List(root); len(list) != 0 {
		t.Fatalf("List after Delete = %v", list)
	}
}

func TestCheckLimits(t *testing.T) {
	root := tree.Root(t.TempDir())
	for i, st := range []string{sessions.Running, sessions.Starting, sessions.Stopped, sessions.Removed} {
		s := &sessions.Session{ID: "000" + string(rune('0'+i)), DelegatedBy: "alice", Status: st, Created: time.Now()}
		if err := sessions.Create(root, s); err != nil {
			t.Fatal(err)
		}
	}
	var le *sessions.LimitError
	for _, tc := range []struct {
		name                   string
		depth, maxDepth, maxCc int
		want                   error
	}{
		{"under both", 1, 2, 3, nil},
		{"at depth", 2, 2, 3, sessions.ErrDepth},
		{"at concurrency", 0, 2, 2, sessions.ErrConcurrency},
		{"no limits", 9, 0, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := sessions.CheckLimits(root, "alice", tc.depth, tc.maxDepth, tc.maxCc)
			if !errors.Is(err, tc.want) || (tc.want != nil && !errors.As(err, &le)) {
				t.Fatalf("CheckLimits: %v, want %v", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), "refused") {
				t.Errorf("unclear refusal %q", err)
			}
		})
	}
	if err := sessions.CheckLimits(root, "bob", 0, 2, 1); err != nil {
		t.Fatalf("bob has no sessions: %v", err)
	}
}

func TestAgentID(t *testing.T) {
	long := strings.Repeat("a", 70)
	for _, tc := range []struct{ by, want string }{
		{"alice", "alice-ab12"},
		{"reviewer--run1", "reviewer-ab12"},
		{long, strings.Repeat("a", tree.MaxNameLen-5) + "-ab12"},
	} {
		got := sessions.AgentID(tc.by, "ab12")
		if got != tc.want || tree.CheckName("agent", got) != nil {
			t.Errorf("AgentID(%q) = %q, want %q", tc.by, got, tc.want)
		}
	}
	if id := sessions.NewID(); sessions.CheckID(id) != nil {
		t.Fatalf("NewID = %q", id)
	}
}
