package registry

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestKnown(t *testing.T) {
	root := tree.Root(t.TempDir())
	for _, f := range []string{filepath.Join(root.Registry(), "codex.json"), filepath.Join(root.Presence(), "claude.json")} {
		os.MkdirAll(filepath.Dir(f), 0o777)
		if err := os.WriteFile(f, []byte(`{}`), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		id   string
		want bool
	}{
		{"codex", true},  // registered
		{"claude", true}, // a heartbeat
		{"gemini", false},
	} {
		if got := Known(root, tt.id); got != tt.want {
			t.Errorf("Known(%s) = %v, want %v", tt.id, got, tt.want)
		}
	}
}
