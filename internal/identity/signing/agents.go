package signing

import (
	"errors"
	"slices"

	"github.com/collabdev/collab/internal/identity/keyring"
)

// lister is a keyring that can list its agents (keyring.Ring).
type lister interface {
	List() (map[string][]keyring.Key, error)
}

// Agents returns, sorted, the agents that have keys in the keyring,
// revoked or not (as HasKeys): the names whose messages can be told
// genuine, which look-alike names imitate (package lookalike). It is nil
// for a nil Verifier, a keyring that cannot list its agents, or one that
// cannot be read.
func (v *Verifier) Agents() []string {
	if v == nil {
		return nil
	}
	l, ok := v.keys.(lister)
	if !ok {
		return nil
	}
	all, err := l.List()
	if err != nil {
		return nil
	}
	var out []string
	for a, keys := range all {
		if len(keys) > 0 {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

// LoadAgentKey returns agent's signer: from path when given (where a
// missing file is an error), else from DefaultKeyPath, where a missing
// file means the agent does not sign (nil, nil). A key others can read is
// an error either way.
func LoadAgentKey(path, agent string, getenv func(string) string) (*Signer, error) {
	explicit := path != ""
	if !explicit {
		path = DefaultKeyPath(agent, getenv)
	}
	s, err := LoadKey(path, agent)
	if errors.Is(err, ErrNoKey) && !explicit {
		return nil, nil
	}
	return s, err
}
