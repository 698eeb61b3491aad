// Package registry reads the optional list of known agents: one JSON file
// per agent at ROOT/registry/agents/AGENT.json (SPEC §1), such as
//
//	{"id": "codex", "role": "reviewer", "host": "vm-2"}
//
// The file name is the agent: a missing id is taken from it, and a file whose
// id names someone else is skipped. Other fields are kept in [Agent.Extra].
//
// collab only reads the registry; people and deploy scripts write it. A
// missing folder means no registered agents. Dot-files and names not ending
// in ".json" are ignored; a file that is a symlink (never followed), not a
// regular file, larger than [MaxSize], named for an invalid agent name or not
// a JSON object with string id, role and host is skipped and reported, never
// fatal.
package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"collab/internal/plumbing/safedir"
	"collab/internal/plumbing/tree"
)

// MaxSize is the largest registry file read.
const MaxSize = 64 << 10

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("registry: malformed agent")

const suffix = ".json"

// Agent is one registered agent.
type Agent struct {
	ID   string
	Role string
	Host string

	// Extra holds the file's other fields, verbatim.
	Extra map[string]json.RawMessage
}

// Skip reports a registry file that was not returned.
type Skip struct {
	File string // the file name within the registry folder
	Err  error
}

func (s Skip) String() string {
	err := s.Err
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is File
	}
	return fmt.Sprintf("%s: %v", s.File, err)
}

// Agent returns the agent the skipped file is named for, or "" if its name
// is not AGENT.json.
func (s Skip) Agent() string {
	if a, ok := strings.CutSuffix(s.File, suffix); ok && tree.ValidName(a) {
		return a
	}
	return ""
}

// List reads every registered agent, sorted by id, and reports the files it
// skipped. Only a folder that exists but cannot be listed is an error.
func List(root tree.Root) ([]Agent, []Skip, error) {
	d, err := safedir.Open(root.Registry())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open registry: %w", err)
	}
	defer d.Close()
	entries, err := d.ReadDir()
	if err != nil {
		return nil, nil, fmt.Errorf("list registry: %w", err)
	}
	var (
		agents []Agent
		skips  []Skip
	)
	for _, e := range entries {
		name := e.Name()
		id, ok := strings.CutSuffix(name, suffix)
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		if err := tree.CheckName("agent", id); err != nil {
			skips = append(skips, Skip{File: name, Err: err})
			continue
		}
		data, _, err := d.ReadFile(name, MaxSize)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err == nil {
			var a Agent
			if a, err = decode(data, id); err == nil {
				agents = append(agents, a)
				continue
			}
		}
		skips = append(skips, Skip{File: name, Err: err})
	}
	slices.SortFunc(agents, func(a, b Agent) int { return strings.Compare(a.ID, b.ID) })
	return agents, skips, nil
}

// decode parses a registry file's contents for the agent named id.
func decode(data []byte, id string) (Agent, error) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(data, &f); err != nil {
		return Agent{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if f == nil {
		return Agent{}, fmt.Errorf("%w: not an object", ErrMalformed)
	}
	var a Agent
	for _, m := range []struct {
		key string
		dst *string
	}{{"id", &a.ID}, {"role", &a.Role}, {"host", &a.Host}} {
		key, dst := m.key, m.dst
		v, ok := f[key]
		if !ok {
			continue
		}
		delete(f, key)
		if string(v) == "null" {
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return Agent{}, fmt.Errorf("%w: %q: %v", ErrMalformed, key, err)
		}
	}
	if a.ID == "" {
		a.ID = id
	}
	if a.ID != id {
		return Agent{}, fmt.Errorf("%w: id %q in the file of %q", ErrMalformed, a.ID, id)
	}
	if len(f) > 0 {
		a.Extra = f
	}
	return a, nil
}
