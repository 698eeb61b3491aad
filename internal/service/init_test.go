package service

import (
	"context"
	"os"
	"path/filepath"
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
