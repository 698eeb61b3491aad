package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// newTree returns a fresh collab tree, as 'collab init' would make it:
// every command but init refuses a root that is not one.
func newTree(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(tree.Root(root).Channels(), 0o700); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestNotATree: only init makes a tree; every other command refuses a root
// that is not one (a share not mounted) and writes nothing there.
func TestNotATree(t *testing.T) {
	cmds := [][]string{
		{"send", "--agent", "a", "--channel", "dev", "hello"},
		{"read", "--channel", "dev"},
		{"who"},
		{"who", "--check", "a"},
		{"inbox", "--agent", "a"},
		{"task", "list", "--channel", "dev"},
		{"doc", "--channel", "dev", "list"},
		{"archive", "--channel", "dev", "--older-than", "1h"},
		{"jobs"},
		{"watch", "--agent", "a", "--channel", "dev", "--cli", "command", "--cmd", "cat"},
	}
	for _, empty := range []bool{false, true} {
		for _, args := range cmds {
			t.Run(strings.Join(args[:1], " "), func(t *testing.T) {
				root := filepath.Join(t.TempDir(), "collab")
				if empty {
					if err := os.Mkdir(root, 0o700); err != nil {
						t.Fatal(err)
					}
				}
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second) // old code: watch ran
				defer cancel()
				err := run(ctx, append(args, "--root", root), func(string) string { return "" }, strings.NewReader(""), new(strings.Builder), new(strings.Builder))
				if !errors.Is(err, tree.ErrNotTree) || !strings.Contains(err.Error(), "mounted") {
					t.Errorf("%v: err = %v, want tree.ErrNotTree asking whether the share is mounted", args, err)
				}
				if empty {
					if ents, _ := os.ReadDir(root); len(ents) != 0 {
						t.Errorf("%v wrote %d entries into a root that is not a tree", args, len(ents))
					}
				} else if _, err := os.Stat(root); err == nil {
					t.Errorf("%v created the missing root", args)
				}
			})
		}
	}
}
