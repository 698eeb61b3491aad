package natsbus_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// TestWakeAndCheckParity: Wake gives the file of each message announced
// on its channel; CheckParity finds a file the stream lacks and a message
// whose file is gone, and its lists are never nil.
func TestWakeAndCheckParity(t *testing.T) {
	s := startServer(t, true, nil)
	root := tree.Root(t.TempDir())
	b, _ := connect(t, natsbus.Options{URL: s.URL()})
	ctx := ctxT(t)
	if _, err := b.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	files, stop, err := b.Wake("room")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	m := post(t, root, "room", "claude", "hello")
	if err := b.PublishMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-files:
		if f != m.File {
			t.Errorf("woken by %q, want %q", f, m.File)
		}
	case <-ctx.Done():
		t.Fatal("no wake")
	}
	p, err := b.CheckParity(ctx, root, "room", time.Hour)
	if err != nil || p.Differ() || p.Files != 1 || p.Stream != 1 || p.MissingInStream == nil || p.Duplicates == nil {
		t.Fatalf("CheckParity = %+v, %v; want the same on both sides", p, err)
	}
	unsent := post(t, root, "room", "claude", "files only")
	if err := os.Remove(filepath.Join(string(root.Channel("room")), m.File)); err != nil {
		t.Fatal(err)
	}
	p, err = b.CheckParity(ctx, root, "room", time.Hour)
	if err != nil || !p.Differ() || len(p.MissingInStream) != 1 || p.MissingInStream[0]+".json" != unsent.File ||
		len(p.MissingInFolder) != 1 || p.MissingInFolder[0]+".json" != m.File {
		t.Errorf("CheckParity = %+v, %v", p, err)
	}
}
