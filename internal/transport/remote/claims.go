package remote

import (
	"errors"

	"collab/internal/agent/claim"
)

// ClaimDirs returns the claim.Dirs of the client's agent on the mount:
// each operation of a claim.Store (claim.Store.Dirs) is performed by the
// bridge (op claimfs) in ROOT/claims/CHANNEL/AGENT/, synchronously, never
// through the outbox. A bridge that does not answer is an error wrapping
// ErrUnreachable.
func (c *Client) ClaimDirs() claim.Dirs { return claimDirs{c} }

type claimDirs struct{ c *Client }

func (d claimDirs) OpenClaims(channel, agent string, create bool) (claim.Dir, error) {
	return nil, errors.New("remote: claims over the bridge: not yet")
}
