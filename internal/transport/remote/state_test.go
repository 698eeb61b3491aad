package remote

import (
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestLocalTree: a host without the mount reads its own things from the
// root it was given, else from its mirror under its state directory.
func TestLocalTree(t *testing.T) {
	state := t.TempDir()
	if got, want := LocalTree(state, false, "/ignored"), tree.Root(filepath.Join(state, "tree")); got != want {
		t.Errorf("LocalTree without a root = %s, want the mirror %s", got, want)
	}
	if got := LocalTree(state, true, "/srv/collab"); got != "/srv/collab" {
		t.Errorf("LocalTree with a root = %s, want it", got)
	}
}
