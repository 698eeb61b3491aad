package tree

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

func TestCheck(t *testing.T) {
	made := Root(t.TempDir())
	if err := os.Mkdir(made.Channels(), 0o700); err != nil {
		t.Fatal(err)
	}
	file := Root(filepath.Join(t.TempDir(), "file"))
	if err := os.WriteFile(string(file), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		root Root
		want string // in the error; "" for none
	}{
		{"a tree", made, ""},
		{"missing", Root(filepath.Join(t.TempDir(), "missing")), "does not exist"},
		{"empty folder", Root(t.TempDir()), "no channels/ folder"},
		{"a file", file, "is not a folder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.root.Check()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrNotTree) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "mounted") {
				t.Errorf("Check = %v, want ErrNotTree saying %q and asking whether it is mounted", err, tt.want)
			}
		})
	}
}

// TestUnsticky: a group-writable folder without the sticky bit is named,
// a channel's folders among them when asked; a sticky one, a private one
// and the shared documents are not.
func TestUnsticky(t *testing.T) {
	root := Root(t.TempDir())
	for _, dir := range append(root.Folders(), root.Channel("dev"), root.Claims("dev")) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o775|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
	}
	if got := root.Unsticky("dev"); len(got) != 0 {
		t.Fatalf("all sticky: %v", got)
	}
	for dir, mode := range map[string]os.FileMode{
		root.Channels():     0o775,
		root.Channel("dev"): 0o775 | os.ModeSetgid,
		root.join("docs"):   0o775,
		root.Presence():     0o755,
	} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	got := root.Unsticky("dev")
	if want := []string{root.Channels(), root.Channel("dev")}; !slices.Equal(got, want) {
		t.Errorf("Unsticky = %v, want %v", got, want)
	}
	if got := root.Unsticky(); !slices.Equal(got, []string{root.Channels()}) {
		t.Errorf("Unsticky() = %v, want channels/ alone", got)
	}
}
