package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestInit(t *testing.T) {
	ctx := context.Background()
	root := tree.Root(t.TempDir())
	m := NewMount(Config{Root: root})
	if err := os.Chmod(string(root), 0o777); err != nil {
		t.Fatal(err)
	}
	res, err := m.Init(ctx, InitRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Folders) != len(root.Folders())+1 {
		t.Errorf("%d folders, want the tree's %d and the keyring", len(res.Folders), len(root.Folders()))
	}
	for _, f := range res.Folders {
		if fi, err := os.Stat(f.Path); err != nil || fi.Mode().Perm()&0o002 != 0 {
			t.Errorf("%s: %v, mode %v: want a folder no one else may write", f.Path, err, fi.Mode())
		}
	}
	if err := root.Check(); err != nil {
		t.Errorf("after Init the folder is not a tree: %v", err)
	}

	if _, err := m.Init(ctx, InitRequest{Group: "no-such-group-here"}); errkind.Of(err) != errkind.Invalid {
		t.Errorf("unknown group: %v (kind %v), want Invalid", err, errkind.Of(err))
	}

	linked := tree.Root(t.TempDir())
	if err := os.Symlink(t.TempDir(), filepath.Join(string(linked), "channels")); err != nil {
		t.Fatal(err)
	}
	_, err = NewMount(Config{Root: linked}).Init(ctx, InitRequest{})
	if err == nil || errkind.Of(err) == errkind.Invalid {
		t.Errorf("channels/ a link: %v (kind %v), want a refusal that is not the caller's input", err, errkind.Of(err))
	}
}

// TestInitWritesTheProtocolVersion: init publishes ROOT/collab.json with
// this collab's protocol, never replaces it, and refuses a tree written
// in a newer protocol.
func TestInitWritesTheProtocolVersion(t *testing.T) {
	root := tree.Root(t.TempDir())
	m := NewMount(Config{Root: root})
	if _, err := m.Init(context.Background(), InitRequest{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(string(root), tree.VersionName)
	first, err := os.ReadFile(p)
	if err != nil || !strings.Contains(string(first), `"protocol":1`) {
		t.Fatalf("collab.json = %s, %v", first, err)
	}
	if _, err := m.Init(context.Background(), InitRequest{}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(p); string(again) != string(first) {
		t.Errorf("init again replaced collab.json: %s", again)
	}
	os.Remove(p)
	os.WriteFile(p, []byte(`{"protocol": 2}`), 0o644)
	if _, err := m.Init(context.Background(), InitRequest{}); err == nil || !strings.Contains(err.Error(), "upgrade collab") {
		t.Errorf("init of a protocol 2 tree = %v, want a refusal", err)
	}
}
