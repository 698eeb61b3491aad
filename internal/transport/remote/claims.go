package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/transport/bridge"
)

// ClaimDirs returns the claim.Dirs of the client's agent on the mount, for
// claim.Store.Dirs: each operation of the Store is performed by a bridge
// (op claimfs) in ROOT/claims/CHANNEL/AGENT/ with the same safedir calls,
// synchronously and never through the outbox, so the same no-replace
// publishes on the mount decide every claim. A bridge that does not
// answer makes the operation fail with an error wrapping ErrUnreachable
// (the Store's caller tries again later: the watcher keeps the message
// queued, or its reply in its outbox); a name taken is fs.ErrExist and a
// file missing fs.ErrNotExist, as on the files. The folder is opened
// lazily: a folder that does not exist shows as its files not existing.
// Only the client's own agent's folders are reachable (the bridge takes
// the agent from the subject, which the NATS permissions tie to the
// agent's credentials).
func (c *Client) ClaimDirs() claim.Dirs { return claimDirs{c} }

type claimDirs struct{ c *Client }

func (d claimDirs) OpenClaims(channel, agent string, _ bool) (claim.Dir, error) {
	if agent != d.c.cfg.Agent {
		return nil, fmt.Errorf("remote: claims of %q through %q's client", agent, d.c.cfg.Agent)
	}
	return &claimDir{c: d.c, channel: channel}, nil
}

// claimDir is a claims folder on the mount. Each call is one request.
type claimDir struct {
	c       *Client
	channel string
}

func (d *claimDir) do(op, name string, data []byte, limit int64) (bridge.ClaimFSReply, error) {
	var r bridge.ClaimFSReply
	body, err := json.Marshal(bridge.ClaimFSRequest{Channel: d.channel, Op: op, Name: name, Data: data, Limit: limit})
	if err != nil {
		return r, err
	}
	err = d.c.request(context.Background(), bridge.OpClaimFS, body, &r)
	var be *bridge.Error
	if errors.As(err, &be) {
		switch be.Code {
		case bridge.CodeNotFound:
			err = fmt.Errorf("%w (%w)", fs.ErrNotExist, err)
		case bridge.CodeConflict:
			err = fmt.Errorf("%w (%w)", fs.ErrExist, err)
		}
	}
	if err != nil {
		return r, &fs.PathError{Op: "claimfs " + op, Path: d.channel + "/" + d.c.cfg.Agent + "/" + name, Err: err}
	}
	return r, nil
}

func (d *claimDir) Publish(name string, data []byte, _ fs.FileMode) error {
	_, err := d.do(bridge.ClaimFSPublish, name, data, 0)
	return err
}

func (d *claimDir) Replace(name string, data []byte, _ fs.FileMode) error {
	_, err := d.do(bridge.ClaimFSReplace, name, data, 0)
	return err
}

func (d *claimDir) ReadFile(name string, limit int64) ([]byte, fs.FileInfo, error) {
	r, err := d.do(bridge.ClaimFSRead, name, nil, limit)
	if err != nil {
		return nil, nil, err
	}
	if int64(len(r.Data)) > limit {
		return nil, nil, &fs.PathError{Op: "claimfs read", Path: name, Err: errors.New("larger than asked")}
	}
	return r.Data, fileInfo{name: name, r: r}, nil
}

func (d *claimDir) Lstat(name string) (fs.FileInfo, error) {
	r, err := d.do(bridge.ClaimFSLstat, name, nil, 0)
	if err != nil {
		return nil, err
	}
	return fileInfo{name: name, r: r}, nil
}

func (d *claimDir) Close() error { return nil }

// fileInfo is a file's info as a claimfs reply gives it.
type fileInfo struct {
	name string
	r    bridge.ClaimFSReply
}

func (fi fileInfo) Name() string       { return fi.name }
func (fi fileInfo) Size() int64        { return fi.r.Size }
func (fi fileInfo) Mode() fs.FileMode  { return fi.r.Mode }
func (fi fileInfo) ModTime() time.Time { return fi.r.ModTime }
func (fi fileInfo) IsDir() bool        { return fi.r.Mode.IsDir() }
func (fi fileInfo) Sys() any           { return nil }
