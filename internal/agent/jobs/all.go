package jobs

import (
	"errors"
	"io/fs"
	"slices"

	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// ListAll returns the jobs of every agent with a folder under ROOT/state,
// newest first. An agent folder that is a symlink or not validly named is
// skipped; unreadable records are left out, as by [List].
func ListAll(root tree.Root) ([]Job, error) {
	d, err := safedir.Open(root.States())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ents, err := d.ReadDir()
	d.Close()
	if err != nil {
		return nil, err
	}
	var all []Job
	for _, e := range ents {
		if !e.IsDir() || !tree.ValidName(e.Name()) {
			continue
		}
		js, err := List(root, e.Name())
		if err != nil {
			return nil, err
		}
		all = append(all, js...)
	}
	slices.SortStableFunc(all, func(a, b Job) int { return b.Started.Compare(a.Started) })
	return all, nil
}
