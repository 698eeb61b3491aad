package remote

import (
	"path/filepath"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// MirrorTree is the tree a host without the mount keeps under its state
// directory state: the mirror of its channels (collab watch --remote),
// its keyring copy and its jobs; collab mcp --remote reads it.
func MirrorTree(state string) tree.Root { return tree.Root(filepath.Join(state, "tree")) }

// LocalTree is the tree a host without the mount reads its own things
// from (its keyring copy, its jobs): root when given (set), else the
// mirror under state (MirrorTree). It may be missing.
func LocalTree(state string, set bool, root string) tree.Root {
	if set {
		return tree.Root(root)
	}
	return MirrorTree(state)
}
