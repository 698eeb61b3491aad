// Package registry reads and writes the optional list of known agents:
// one JSON file per agent at ROOT/registry/agents/AGENT.json (docs/protocol.md#the-shared-tree),
// such as
//
//	{"id": "codex", "role": "reviewer", "host": "vm-2",
//	 "runtime": "claude_code", "capabilities": ["go", "testing"],
//	 "registered": "2026-01-11T16:00:00Z", "signature": {…}}
//
// The file name is the agent: a missing id is taken from it, and a file whose
// id names someone else is skipped. Other fields are kept in [Agent.Extra].
//
// People and deploy scripts write entries by hand; an agent without a
// watcher registers itself ([Write], collab agent register) and removes its
// entry ([Remove], collab agent unregister), so that who and a message's
// delivery status know it. [Write] replaces the file atomically. An agent
// with a key signs its entry (package signing, kind "registry", over
// [Agent.Payload]); [Agent.Verify] checks it. The extra members are not
// signed. A missing folder means no registered agents. Dot-files and names not ending
// in ".json" are ignored; a file that is a symlink (never followed), not a
// regular file, larger than [MaxSize], named for an invalid agent name or not
// a JSON object with string id, role and host is skipped and reported as an
// [agentfiles.Skip], never fatal.
package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/agentfiles"
	"github.com/collabdev/collab/internal/plumbing/jsonobj"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// MaxSize is the largest registry file read.
const MaxSize = 64 << 10

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("registry: malformed agent")

// Agent is one registered agent.
type Agent struct {
	ID   string
	Role string
	Host string

	Runtime      string   // the agent's runtime: claude_code, codex, a script…
	Capabilities []string // what it can do, one word each
	Registered   string   // when it registered (RFC 3339, UTC)
	Signature    *signing.Signature

	// Extra holds the file's other fields, verbatim.
	Extra map[string]json.RawMessage
}

// List reads every registered agent, sorted by id, and reports the files it
// skipped. Only a folder that exists but cannot be listed is an error.
func List(root tree.Root) ([]Agent, []agentfiles.Skip, error) {
	var agents []Agent
	skips, err := agentfiles.Each(root.Registry(), func(d *safedir.Dir, id string) error {
		data, _, err := d.ReadFile(agentfiles.Name(id), MaxSize)
		if err != nil {
			return err
		}
		a, err := decode(data, id)
		if err == nil {
			agents = append(agents, a)
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read registry: %w", err)
	}
	slices.SortFunc(agents, func(a, b Agent) int { return strings.Compare(a.ID, b.ID) })
	return agents, skips, nil
}

// decode parses a registry file's contents for the agent named id.
func decode(data []byte, id string) (Agent, error) {
	f, err := jsonobj.Parse(data)
	if err != nil {
		return Agent{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	var a Agent
	for _, m := range []struct {
		key string
		dst *string
	}{{"id", &a.ID}, {"role", &a.Role}, {"host", &a.Host}} {
		if err := f.Take(m.key, m.dst); err != nil {
			return Agent{}, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	}
	f.Lenient("runtime", &a.Runtime)
	f.Lenient("capabilities", &a.Capabilities)
	f.Lenient("registered", &a.Registered)
	f.Lenient(signing.Field, &a.Signature)
	if a.ID == "" {
		a.ID = id
	}
	if a.ID != id {
		return Agent{}, fmt.Errorf("%w: id %q in the file of %q", ErrMalformed, a.ID, id)
	}
	a.Extra = f.Rest()
	return a, nil
}
