package registry

import (
	"github.com/collabdev/collab/internal/plumbing/agentfiles"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Known reports whether agent id is known in the tree: it has a registry
// entry or a presence file. A message to an unknown agent may be a typo
// (collab send warns); it is still delivered, since the agent may start
// later. id must be a valid name.
func Known(root tree.Root, id string) bool {
	for _, dir := range []string{root.Registry(), root.Presence()} {
		d, err := safedir.Open(dir) // no link followed below ROOT
		if err != nil {
			continue
		}
		_, err = d.Lstat(agentfiles.Name(id))
		d.Close()
		if err == nil {
			return true
		}
	}
	return false
}
