package watcher_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestJanitorRemovesOnlyOldOrphans: a temp file a crashed writer left 40 h
// ago goes; one from a write that may still be in progress stays, and so
// does everything that is not a temp file. The claim and reply token
// orphans are where package claim writes them, in ROOT/claims/CH/AGENT/,
// named as safedir names a temp file (".NAME.RANDOM.tmp").
func TestJanitorRemovesOnlyOldOrphans(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	now := time.Now()
	claimed := channel.NewID("alice", now.Add(-37*time.Hour), "0a0b") // the message a crashed watcher claimed
	files := map[string]time.Duration{
		filepath.Join(root.Channel(chName), ".msg-x.json.ab12.tmp"):                       40 * time.Hour,
		filepath.Join(root.Channel(chName), ".msg-y.json.cd34.tmp"):                       time.Minute,
		filepath.Join(root.Channel(chName), ".keep"):                                      40 * time.Hour,
		filepath.Join(root.State(agent), ".watch.json.ef56.tmp"):                          50 * time.Hour,
		filepath.Join(root.AgentClaims(chName, agent), "."+claimed+".json.1a2b3c4d.tmp"):  37 * time.Hour,
		filepath.Join(root.AgentClaims(chName, agent), "."+claimed+".reply.5e6f7a8b.tmp"): time.Minute,
	}
	for p, age := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"partial":`), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, now.Add(-age), now.Add(-age))
	}
	h := start(t, config(root, &fakeRunner{}))
	waitFor(t, "the janitor's sweep", func() bool { return len(h.logs.find("janitor: removed an orphaned temp file")) == 3 })
	for p, age := range files {
		_, err := os.Lstat(p)
		gone := errors.Is(err, fs.ErrNotExist)
		if want := age > 36*time.Hour && filepath.Base(p) != ".keep"; gone != want {
			t.Errorf("%s (age %v): gone = %v, want %v", p, age, gone, want)
		}
	}
}
