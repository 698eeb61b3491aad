package safedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestStickyIsInherited: in a set-group-ID, sticky folder (a tree made by
// init --group) a new folder is sticky too, so no member of the group can
// remove another's files in a channel made later.
func TestStickyIsInherited(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o775|fs.ModeSetgid|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	withUmask(0o022, func() {
		if err := MkdirAll(filepath.Join(dir, "a", "b")); err != nil {
			t.Fatal(err)
		}
	})
	for _, p := range []string{"a", "a/b"} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if want := fs.ModeSetgid | fs.ModeSticky; fi.Mode()&want != want || fi.Mode().Perm() != 0o775 {
			t.Errorf("%s: mode %v, want setgid, sticky, 0775", p, fi.Mode())
		}
	}
}

// TestPrivate: a private folder is made writable by its owner alone, one
// left group-writable is repaired, and what is read from it must be this
// account's own file; a dropbox in it is group-writable and sticky.
func TestPrivate(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o775|fs.ModeSetgid|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "state", "agent")
	d, err := CreatePrivate(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := d.Stat()
	if fi.Mode().Perm()&0o022 != 0 || fi.Mode()&fs.ModeSetgid == 0 {
		t.Errorf("private folder mode %v: want setgid, writable by its owner alone", fi.Mode())
	}
	if err := d.Replace("own.json", []byte("{}"), 0o666); err != nil {
		t.Fatal(err)
	}
	_, fi, err = d.ReadFile("own.json", 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckOwn("own.json", fi); err != nil {
		t.Errorf("CheckOwn(own file) = %v", err)
	}
	// Group-writable, or a second link: not this account's own file.
	os.Chmod(filepath.Join(p, "own.json"), 0o664)
	_, fi, _ = d.ReadFile("own.json", 100)
	if err := CheckOwn("own.json", fi); !errors.Is(err, ErrNotPrivate) {
		t.Errorf("CheckOwn(group-writable) = %v, want ErrNotPrivate", err)
	}
	os.Chmod(filepath.Join(p, "own.json"), 0o644)
	if err := os.Link(filepath.Join(p, "own.json"), filepath.Join(dir, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	_, fi, _ = d.ReadFile("own.json", 100)
	if err := CheckOwn("own.json", fi); !errors.Is(err, ErrNotPrivate) {
		t.Errorf("CheckOwn(two links) = %v, want ErrNotPrivate", err)
	}
	d.Close()

	// Made group-writable (as before collab kept it private): repaired.
	os.Chmod(p, 0o775|fs.ModeSetgid)
	d, err = OpenPrivate(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ = d.Stat()
	d.Close()
	if fi.Mode().Perm()&0o022 != 0 {
		t.Errorf("OpenPrivate left mode %v", fi.Mode())
	}

	box, err := CreateDropbox(filepath.Join(p, "jobs"))
	if err != nil {
		t.Fatal(err)
	}
	fi, _ = box.Stat()
	box.Close()
	if want := fs.ModeSticky | fs.ModeSetgid; fi.Mode()&want != want || fi.Mode().Perm()&0o020 == 0 {
		t.Errorf("dropbox mode %v, want group-writable, setgid and sticky", fi.Mode())
	}

	if os.Geteuid() == 0 {
		// Owned by another account: refused, naming the owner.
		if err := os.Chown(p, 65534, -1); err != nil {
			t.Skip(err)
		}
		if _, err := OpenPrivate(p); !errors.Is(err, ErrNotPrivate) {
			t.Errorf("OpenPrivate(another's folder) = %v, want ErrNotPrivate", err)
		}
		if _, err := CreatePrivate(p); !errors.Is(err, ErrNotPrivate) {
			t.Errorf("CreatePrivate(another's folder) = %v, want ErrNotPrivate", err)
		}
	}
}
