package claim

import (
	"encoding/json"
	"errors"
	"io/fs"
	"strconv"
	"strings"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Signed is one signed file of an agent's claims folder as an audit sees
// it: its name, its kind ([KindClaim] or [KindToken]) and the verdict on
// its signature as that agent's.
type Signed struct {
	File    string
	Kind    string
	Verdict signing.Verdict
}

// Audit checks, as agent's, the signature of every claim generation and
// reply token in agent's claims folder of channel (ROOT/claims/C/A), for
// 'collab verify': a claim or token in a keyed agent's name that does not
// verify is how a member of the tree's group would keep that agent from
// answering (a watcher takes such a claim over; verify shows it). Files
// of other kinds, and ones that do not parse (which a watcher treats as
// torn), are left out. A missing folder has none.
func Audit(root tree.Root, channel, agent string, v *signing.Verifier) ([]Signed, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return nil, err
	}
	var out []Signed
	err := safedir.EachFile(root.AgentClaims(channel, agent), "", func(d *safedir.Dir, name string) {
		id, gen, kind, ok := parseFile(name)
		if !ok {
			return
		}
		raw, _, err := d.ReadFile(name, maxFile)
		if err != nil {
			return
		}
		s := Signed{File: name, Kind: kind}
		switch kind {
		case KindClaim:
			var c Claim
			if json.Unmarshal(raw, &c) != nil || !knownStatus(c.Status) {
				return
			}
			s.Verdict = c.Verify(v, channel, agent, id, gen)
		case KindToken:
			var t Token
			if json.Unmarshal(raw, &t) != nil || t.Reply == "" {
				return
			}
			s.Verdict = t.Verify(v, channel, agent, id, gen)
		}
		out = append(out, s)
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return out, err
}

// parseFile parses the name of a claim generation (ID.json, ID.N.json) or
// a reply token (ID.reply, ID.reply.N): a message id holds no '.'.
func parseFile(name string) (id string, gen int, kind string, ok bool) {
	if base, isClaim := strings.CutSuffix(name, ".json"); isClaim {
		id, g, dotted := strings.Cut(base, ".")
		if gen, ok = 0, true; dotted {
			gen, ok = generation(g)
		}
		return id, gen, KindClaim, ok && checkID(id) == nil
	}
	id, rest, found := strings.Cut(name, ".reply")
	if !found || checkID(id) != nil {
		return "", 0, "", false
	}
	if rest == "" {
		return id, 0, KindToken, true
	}
	g, isGen := strings.CutPrefix(rest, ".")
	gen, ok = generation(g)
	return id, gen, KindToken, isGen && ok
}

// generation parses a generation number after the first: 1 to maxGen-1,
// in decimal without leading zeros.
func generation(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0 && n < maxGen && strconv.Itoa(n) == s
}
