package remote

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/collabdev/collab/internal/transport/bridge"
)

// Doc performs req (the bridge's doc op: a channel's shared documents) as
// the client's agent and returns the reply. A refusal is a *bridge.Error;
// a conflict's current version is in the reply's Version (also returned
// with the error). Documents are not queued in the outbox: an append or
// a versioned write sent late could land on a newer document, so with no
// bridge the error wraps ErrUnreachable and nothing is kept.
func (c *Client) Doc(ctx context.Context, req bridge.DocRequest) (bridge.DocReply, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return bridge.DocReply{}, err
	}
	var r bridge.DocReply
	if err := c.request(ctx, bridge.OpDoc, body, &r); err != nil {
		return r, fmt.Errorf("doc %s: %w", req.Action, err)
	}
	return r, nil
}
