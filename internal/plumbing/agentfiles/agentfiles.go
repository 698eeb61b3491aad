// Package agentfiles lists a folder that holds one JSON file per agent,
// AGENT.json: the presence heartbeats (ROOT/signals/presence) and the
// registry (ROOT/registry/agents). The rules are the same for both:
//
//   - dot-files (a writer's temp files) and names not ending in ".json" are
//     not agents' files and are passed over in silence;
//   - a file named for an invalid agent name, or one the caller cannot
//     read or decode, is reported as a [Skip], never fatal, so one bad
//     file never hides the others;
//   - a file removed between the listing and its read is not there;
//   - a missing folder holds no files; only a folder that exists but
//     cannot be opened or listed is an error.
package agentfiles

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Suffix ends every agent's file name.
const Suffix = ".json"

// Name is the file name of agent's file.
func Name(agent string) string { return agent + Suffix }

// Skip reports a file that was not returned.
type Skip struct {
	File string // the file name within the folder
	Err  error
}

func (s Skip) String() string {
	err := s.Err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is File
	}
	return tree.Printable(fmt.Sprintf("%s: %v", s.File, err)) // the name comes from a listing
}

// Agent returns the agent the skipped file is named for, or "" if its name
// is not AGENT.json.
func (s Skip) Agent() string {
	if a, ok := strings.CutSuffix(s.File, Suffix); ok && tree.ValidName(a) {
		return a
	}
	return ""
}

// Each calls read for every agent's file in dir, in listing order, with the
// open folder and the agent the file is named for. An error from read that
// wraps fs.ErrNotExist drops the file; any other is reported as a Skip.
func Each(dir string, read func(d *safedir.Dir, agent string) error) ([]Skip, error) {
	d, err := safedir.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	defer d.Close()
	entries, err := d.ReadDir()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var skips []Skip
	for _, e := range entries {
		name := e.Name()
		agent, ok := strings.CutSuffix(name, Suffix)
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		if err := tree.CheckName("agent", agent); err != nil {
			skips = append(skips, Skip{File: name, Err: err})
			continue
		}
		if err := read(d, agent); err != nil && !errors.Is(err, fs.ErrNotExist) {
			skips = append(skips, Skip{File: name, Err: err})
		}
	}
	return skips, nil
}
