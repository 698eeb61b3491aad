package delivery

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Forged is a signed file of a channel's claims folder in an agent's name
// that the keyring says the agent did not write (signing.Verifier.Forged).
type Forged struct {
	Agent   string          `json:"agent"`
	File    string          `json:"file"` // relative to ROOT/claims/CHANNEL
	Kind    string          `json:"kind"` // claim, claim-token or seen
	Verdict signing.Verdict `json:"verdict"`
}

// Audit checks every claim generation, reply token and seen file of
// channel ch (ROOT/claims/CH/AGENT/, each agent's) against v and returns
// the forged ones: what a member of the tree's group writes to keep a
// keyed agent from answering a message (a claim that says it is taken, a
// seen file that says a guard refused it). A watcher under the default
// policy takes a forged claim over and ignores a forged seen file; this
// is how a person sees that someone tried. The cost is one read of each
// file in the channel's claims folder.
func Audit(root tree.Root, ch string, v *signing.Verifier) ([]Forged, error) {
	if err := tree.CheckName("channel", ch); err != nil {
		return nil, err
	}
	var agents []string
	err := safedir.EachFile(root.Claims(ch), "", func(d *safedir.Dir, name string) {
		if fi, err := d.Lstat(name); err == nil && fi.IsDir() && tree.ValidName(name) {
			agents = append(agents, name)
		}
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Forged
	var errs []error
	for _, agent := range agents {
		files, err := claim.Audit(root, ch, agent, v)
		if err != nil {
			errs = append(errs, err)
		}
		for _, f := range files {
			if v.Forged(agent, f.Verdict) {
				out = append(out, Forged{agent, agent + "/" + f.File, f.Kind, f.Verdict})
			}
		}
		err = safedir.EachFile(root.AgentClaims(ch, agent), ".seen", func(d *safedir.Dir, name string) {
			id := strings.TrimSuffix(name, ".seen")
			s, err := ReadSeen(root, ch, agent, id)
			if err != nil {
				return
			}
			if verdict := s.Verify(v, ch, agent, id); v.Forged(agent, verdict) {
				out = append(out, Forged{agent, agent + "/" + name, KindSeen, verdict})
			}
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}
