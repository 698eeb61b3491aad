package safedir_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// listAll returns every path below dir, relative to it.
func listAll(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bothResolvers runs f with openat2 and with the component walk.
func bothResolvers(t *testing.T, f func(t *testing.T)) {
	for _, on := range []bool{true, false} {
		name := "openat2"
		if !on {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			defer safedir.UseOpenat2(safedir.UseOpenat2(on))
			f(t)
		})
	}
}

// TestSymlinkInPath: a symlink anywhere below the root, not only as the
// last element, is refused by every way a directory is opened or made,
// and nothing is created where it points.
func TestSymlinkInPath(t *testing.T) {
	tests := []struct {
		name   string
		link   string // made a symlink, relative to the root
		inside bool   // to a folder inside the root, not outside
		path   string // opened, relative to the root
	}{
		{"intermediate to outside", "channels", false, "channels/dev"},
		{"intermediate to inside", "channels", true, "channels/dev"},
		{"deep intermediate to outside", "state/a", false, "state/a/jobs/x"},
		{"deep intermediate to inside", "state/a", true, "state/a/jobs/x"},
		{"last to outside", "docs/dev", false, "docs/dev"},
	}
	ops := []struct {
		name  string
		exist bool // the target exists behind the link beforehand
		do    func(path string) error
	}{
		{"Open", true, func(p string) error { return closed(safedir.Open(p)) }},
		{"Create", false, func(p string) error { return closed(safedir.Create(p)) }},
		{"MkdirAll", false, safedir.MkdirAll},
		{"MkdirAll existing", true, safedir.MkdirAll},
	}
	for _, tt := range tests {
		for _, op := range ops {
			t.Run(tt.name+"/"+op.name, func(t *testing.T) {
				bothResolvers(t, func(t *testing.T) {
					root, target := t.TempDir(), t.TempDir()
					if tt.inside {
						target = filepath.Join(root, "real")
						if err := os.Mkdir(target, 0o755); err != nil {
							t.Fatal(err)
						}
					}
					link := filepath.Join(root, tt.link)
					if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(target, link); err != nil {
						t.Fatal(err)
					}
					behind := filepath.Join(target, strings.TrimPrefix(tt.path, tt.link))
					if op.exist {
						if err := os.MkdirAll(behind, 0o755); err != nil {
							t.Fatal(err)
						}
					}
					before := listAll(t, target)
					err := op.do(filepath.Join(root, tt.path))
					if !errors.Is(err, safedir.ErrSymlink) {
						t.Fatalf("%s = %v, want ErrSymlink", op.name, err)
					}
					if !strings.Contains(err.Error(), link) {
						t.Errorf("error %q does not name the link %s", err, link)
					}
					if after := listAll(t, target); !slices.Equal(after, before) {
						t.Errorf("behind the link: %v, was %v", after, before)
					}
				})
			})
		}
	}
}

func closed(d *safedir.Dir, err error) error {
	if d != nil {
		d.Close()
	}
	return err
}

// TestReadDirAfterSwap: a listing reopens the folder by path; a folder on
// the way swapped for a link since Open is refused.
func TestReadDirAfterSwap(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		root, outside := t.TempDir(), t.TempDir()
		d, err := safedir.Create(filepath.Join(root, "channels", "dev"))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := os.MkdirAll(filepath.Join(outside, "dev"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(outside, "dev", "planted.json"), nil, 0o644)
		if err := os.Rename(filepath.Join(root, "channels"), filepath.Join(root, "old")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(root, "channels")); err != nil {
			t.Fatal(err)
		}
		if ents, err := d.ReadDir(); !errors.Is(err, safedir.ErrSymlink) {
			t.Errorf("ReadDir = %d entries, %v; want ErrSymlink", len(ents), err)
		}
		err = d.ReadDirBatches(10, func([]fs.DirEntry) error { return nil })
		if !errors.Is(err, safedir.ErrSymlink) {
			t.Errorf("ReadDirBatches = %v, want ErrSymlink", err)
		}
		if _, err := d.OpenRoot(); err == nil {
			t.Error("OpenRoot through a swapped path succeeded")
		}
	})
}

// TestPlainPath: without links everything works, with either resolver,
// for absolute and relative paths.
func TestPlainPath(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		root := t.TempDir()
		for _, p := range []string{filepath.Join(root, "a", "b", "c"), root} {
			d, err := safedir.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Publish("m.json", []byte("{}"), 0o644); err != nil && !errors.Is(err, fs.ErrExist) {
				t.Fatal(err)
			}
			if ents, err := d.ReadDir(); err != nil || len(ents) == 0 {
				t.Fatalf("ReadDir = %v, %v", ents, err)
			}
			if fi, err := d.Lstat("m.json"); err != nil || !fi.Mode().IsRegular() || fi.Size() != 2 {
				t.Fatalf("Lstat = %v, %v", fi, err)
			}
			d.Close()
		}
		t.Chdir(root)
		if err := safedir.MkdirAll(filepath.Join("x", "y")); err != nil {
			t.Fatal(err)
		}
		if err := closed(safedir.Open("x/y")); err != nil {
			t.Fatal(err)
		}
		if err := closed(safedir.Open("/")); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLinkedRoot: the root itself may be a link (a mount point reached
// through one) once resolved by tree.Resolve; unresolved, it is refused.
func TestLinkedRoot(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		real, base := t.TempDir(), t.TempDir()
		link := filepath.Join(base, "collab")
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		noenv := func(string) string { return "" }
		root := tree.Resolve(link, noenv)
		d, err := safedir.Create(root.Channel("dev"))
		if err != nil {
			t.Fatalf("Create under a resolved linked root: %v", err)
		}
		d.Close()
		if _, err := os.Stat(filepath.Join(real, "channels", "dev")); err != nil {
			t.Error(err)
		}
		if err := closed(safedir.Open(tree.Root(link).Channel("dev"))); !errors.Is(err, safedir.ErrSymlink) {
			t.Errorf("Open under the unresolved link = %v, want ErrSymlink", err)
		}
		// A root not made yet, below a linked folder.
		later := tree.Resolve(filepath.Join(link, "later", "collab"), noenv)
		if err := safedir.MkdirAll(later.Presence()); err != nil {
			t.Fatalf("MkdirAll under a resolved, missing root: %v", err)
		}
		if _, err := os.Stat(filepath.Join(real, "later", "collab", "signals", "presence")); err != nil {
			t.Error(err)
		}
	})
}

func TestOpenAppend(t *testing.T) {
	dir := t.TempDir()
	d, err := safedir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, s := range []string{"a\n", "b\n"} {
		f, err := d.OpenAppend("x.log", 0o666)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "x.log")); string(got) != "a\nb\n" {
		t.Errorf("x.log = %q", got)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "x.log")); fi.Mode().Perm()&0o002 != 0 {
		t.Errorf("x.log mode %v: world-writable", fi.Mode())
	}
	os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), filepath.Join(dir, "l.log"))
	if f, err := d.OpenAppend("l.log", 0o644); !errors.Is(err, safedir.ErrSymlink) {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenAppend(symlink) = %v, want ErrSymlink", err)
	}
}
