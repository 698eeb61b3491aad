package watcher_test

import (
	"errors"
	"io/fs"
	"sync/atomic"
	"testing"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// countingDirs is claim.Files under another root that counts its opens.
type countingDirs struct {
	files claim.Files
	opens atomic.Int64
}

func (c *countingDirs) OpenClaims(channel, agent string, create bool) (claim.Dir, error) {
	c.opens.Add(1)
	return c.files.OpenClaims(channel, agent, create)
}

// TestClaimDirs: with Config.ClaimDirs set, the watcher's claims, reply
// tokens and seen files are made through it (as watch --remote's are on the mount,
// through a bridge), not under Root, where the watcher still reads its
// channels and writes its replies.
func TestClaimDirs(t *testing.T) {
	root, elsewhere := tree.Root(t.TempDir()), tree.Root(t.TempDir())
	dirs := &countingDirs{files: claim.Files{Root: elsewhere}}
	cfg := config(root, &fakeRunner{})
	cfg.ClaimDirs = dirs
	start(t, cfg)
	m := send(t, root, agent, "hello")
	waitReplies(t, root, m.ID)
	if c := waitClaim(t, elsewhere, agent, m.ID); c.Status != claim.Replied || c.Reply == "" {
		t.Errorf("claim through ClaimDirs: %+v, want replied with the reply's id", c)
	}
	if _, err := readClaim(root, agent, m.ID); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a claim under Root: %v, want none", err)
	}
	if _, err := delivery.ReadSeen(elsewhere, chName, agent, m.ID); err != nil {
		t.Errorf("the seen file through ClaimDirs: %v", err)
	}
	if _, err := delivery.ReadSeen(root, chName, agent, m.ID); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a seen file under Root: %v, want none", err)
	}
	if dirs.opens.Load() == 0 {
		t.Error("ClaimDirs never opened")
	}
}
