package tree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckShared(t *testing.T) {
	tests := []struct {
		name string
		mode fs.FileMode // of ROOT/state
		ok   bool
	}{
		{"private", 0o700, true},
		{"group-writable", 0o770 | fs.ModeSetgid, true},
		{"world-writable", 0o777, false},
		{"world-writable with sticky bit", 0o777 | fs.ModeSticky, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := Root(t.TempDir())
			dir := filepath.Join(string(root), "state")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.mode); err != nil {
				t.Fatal(err)
			}
			err := root.CheckShared()
			if tt.ok && err != nil {
				t.Errorf("CheckShared = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, ErrWorldWritable) {
				t.Errorf("CheckShared = %v, want ErrWorldWritable", err)
			}
		})
	}
	if err := Root(filepath.Join(t.TempDir(), "missing")).CheckShared(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: %v, want ErrNotExist", err)
	}
	link := Root(t.TempDir())
	if err := os.Symlink(t.TempDir(), filepath.Join(string(link), "state")); err != nil {
		t.Fatal(err)
	}
	if err := link.CheckShared(); !errors.Is(err, ErrSymlinkedFolder) {
		t.Errorf("state/ a symlink: %v, want ErrSymlinkedFolder", err)
	}
}
