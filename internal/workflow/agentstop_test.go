package workflow

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestAgentStopRequested: an agent's stop file is honoured (and removed)
// when written by an account that may stop the instance, under its own
// name; one of another account, or under another account's name, is
// refused and left; an agent's stop file never stops the instance.
func TestAgentStopRequested(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files to other accounts")
	}
	root := tree.Root(t.TempDir())
	if err := os.MkdirAll(root.Workflows(), 0o755); err != nil {
		t.Fatal(err)
	}
	const runner, other = 4242, 4343
	put := func(name string, owner int) string {
		t.Helper()
		p := filepath.Join(root.Workflows(), name)
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, owner, owner); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name        string
		file        string
		owner       int
		stop, taken bool
	}{
		{"the runner's", AgentStopNameBy("wf", "i1", "coder", runner), runner, true, true},
		{"root's", AgentStopNameBy("wf", "i1", "coder", 0), 0, true, true},
		{"another member's", AgentStopNameBy("wf", "i1", "coder", other), other, false, false},
		{"under the runner's name", AgentStopNameBy("wf", "i1", "coder", runner), other, false, false},
		{"another agent's", AgentStopNameBy("wf", "i1", "lead", runner), runner, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := put(c.file, c.owner)
			defer os.Remove(p)
			stop, _ := AgentStopRequested(root, "wf", "i1", "coder", runner)
			if stop != c.stop {
				t.Errorf("stop %v, want %v", stop, c.stop)
			}
			if _, err := os.Stat(p); (err != nil) != c.taken {
				t.Errorf("file removed %v, want %v", err != nil, c.taken)
			}
			if stop, _ := StopRequested(root, "wf", "i1", runner); stop {
				t.Error("an agent's stop file stopped the instance")
			}
		})
	}
}
