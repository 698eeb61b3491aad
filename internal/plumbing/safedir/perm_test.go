package safedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// withUmask runs f with the process umask set to mask. Tests using it must
// not run in parallel.
func withUmask(mask int, f func()) {
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}

func TestNeverWritableByOthers(t *testing.T) {
	dir := t.TempDir()
	withUmask(0, func() {
		d, err := Create(filepath.Join(dir, "a", "b"))
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.Publish("m.json", []byte("{}"), 0o666); err != nil {
			t.Fatal(err)
		}
		if err := d.Replace("p.json", []byte("{}"), 0o777); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"a", "a/b", "a/b/m.json", "a/b/p.json"} {
			fi, err := os.Stat(filepath.Join(dir, p))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm()&0o002 != 0 {
				t.Errorf("%s has mode %v: world-writable", p, fi.Mode())
			}
			// Folders are left group-writable by umask 0; files never are:
			// no other account may edit what this one wrote.
			if dir := fi.IsDir(); dir != (fi.Mode().Perm()&0o020 != 0) {
				t.Errorf("%s has mode %v: umask 0 should leave a folder group-writable and a file not", p, fi.Mode())
			}
		}
	})
}

func TestMkdirAllInSetgidFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	withUmask(0o022, func() {
		if err := MkdirAll(filepath.Join(dir, "x", "y")); err != nil {
			t.Fatal(err)
		}
		// Outside a set-group-ID folder the umask decides.
		plain := t.TempDir()
		if err := MkdirAll(filepath.Join(plain, "z")); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(filepath.Join(plain, "z")); fi.Mode().Perm() != 0o755 {
			t.Errorf("plain folder mode %v, want 0755 under umask 022", fi.Mode().Perm())
		}
	})
	for _, p := range []string{"x", "x/y"} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&fs.ModeSetgid == 0 || fi.Mode().Perm() != 0o775 {
			t.Errorf("%s: mode %v, want setgid and 0775", p, fi.Mode())
		}
	}
	if err := MkdirAll(filepath.Join(dir, "x", "y")); err != nil {
		t.Errorf("MkdirAll of an existing folder: %v", err)
	}
	f := filepath.Join(dir, "file")
	os.WriteFile(f, nil, 0o644)
	if err := MkdirAll(f); err == nil {
		t.Error("MkdirAll over a file succeeded")
	}
}

func TestOpenRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	elsewhere := t.TempDir()
	link := filepath.Join(dir, "channel")
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func(string) (*Dir, error){"Open": Open, "Create": Create} {
		d, err := open(link)
		if !errors.Is(err, ErrSymlink) {
			if d != nil {
				d.Close()
			}
			t.Errorf("%s(symlink to a folder) = %v, want ErrSymlink", name, err)
		}
	}
}

func TestRemoveOrphans(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	now := time.Now()
	files := map[string]time.Duration{ // name: age
		".msg-1.json.ab12.tmp": 40 * time.Hour, // orphan
		".msg-2.json.cd34.tmp": 2 * time.Hour,  // maybe a write in progress
		".msg-3.json.ef56.tmp": 37 * time.Hour, // orphan
		"msg-4.json":           100 * time.Hour,
		".hidden":              100 * time.Hour,
		"x.tmp":                100 * time.Hour, // not ours: no leading dot
	}
	for name, age := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(dir, ".folder.tmp"), 0o755)
	removed, err := d.RemoveOrphans(DefaultOrphanAge, now)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{".msg-1.json.ab12.tmp", ".msg-3.json.ef56.tmp"}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	for name := range files {
		_, err := os.Lstat(filepath.Join(dir, name))
		gone := errors.Is(err, fs.ErrNotExist)
		if gone != slices.Contains(removed, name) {
			t.Errorf("%s: gone=%v, removed=%v", name, gone, slices.Contains(removed, name))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".folder.tmp")); err != nil {
		t.Error("a folder named like a temp file was removed")
	}
}

func TestIsTemp(t *testing.T) {
	for name, want := range map[string]bool{
		".m.json.ab12.tmp": true, ".a.tmp": true, "a.tmp": false, ".tmp": false, "..tmp": false,
		".x": false, "": false,
	} {
		if got := IsTemp(name); got != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestEachFile: the entries ending in the suffix, temp files left out; a
// missing folder has none.
func TestEachFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.json", "b.json", ".b.json.1234.tmp", "c.txt", "d.json.bak"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := EachFile(dir, ".json", func(_ *Dir, name string) { got = append(got, name) }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"a.json", "b.json"}; !slices.Equal(got, want) {
		t.Errorf("EachFile = %q, want %q", got, want)
	}
	if err := EachFile(filepath.Join(dir, "none"), ".json", func(*Dir, string) { t.Error("called for a missing folder") }); err != nil {
		t.Errorf("missing folder: %v", err)
	}
}
