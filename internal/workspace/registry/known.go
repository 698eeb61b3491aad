package registry

import (
	"errors"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/agentfiles"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Known reports whether agent id is known in the tree: it has a registry
// entry or a presence file. A message to an unknown agent may be a typo
// (collab send warns); it is still delivered, since the agent may start
// later. id must be a valid name.
func Known(root tree.Root, id string) bool {
	return KnownTo(root, id, nil)
}

// KnownTo is [Known] judged under v: a registry entry that is forged
// ([Agent.Forged]) does not make id known, nor does one that cannot be
// read while id has keys (it cannot verify). A presence file counts as
// in Known. A nil v judges nothing: KnownTo is Known.
func KnownTo(root tree.Root, id string, v *signing.Verifier) bool {
	if exists(root.Presence(), id) {
		return true
	}
	if !exists(root.Registry(), id) {
		return false
	}
	if v == nil {
		return true
	}
	a, err := Read(root, id)
	if err != nil {
		return !errors.Is(err, ErrNotRegistered) && !v.HasKeys(id)
	}
	return !a.Forged(v)
}

// exists reports whether dir holds id's file (a link is not followed).
func exists(dir, id string) bool {
	d, err := safedir.Open(dir) // no link followed below ROOT
	if err != nil {
		return false
	}
	defer d.Close()
	_, err = d.Lstat(agentfiles.Name(id))
	return err == nil
}
