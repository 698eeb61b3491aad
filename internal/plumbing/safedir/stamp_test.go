package safedir_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/testsupport/bindfstest"
)

// TestStampChanges: adding or removing an entry changes the stamp; the
// fstat fallback gives the same stamp as statx.
func TestStampChanges(t *testing.T) {
	d, path := open(t)
	stamp := func() safedir.Stamp {
		t.Helper()
		s, err := d.Stamp()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s0 := stamp()
	if err := d.Publish("a", []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	s1 := stamp()
	if s1 == s0 {
		t.Errorf("stamp unchanged after a file was added: %+v", s1)
	}
	prev := safedir.UseStatx(false)
	fallback := stamp()
	safedir.UseStatx(prev)
	if fallback != s1 {
		t.Errorf("fstat stamp %+v, statx stamp %+v: want equal", fallback, s1)
	}
	if err := os.Remove(filepath.Join(path, "a")); err != nil {
		t.Fatal(err)
	}
	if s2 := stamp(); s2 == s1 {
		t.Errorf("stamp unchanged after a file was removed: %+v", s2)
	}
}

// TestStampAcrossMounts: a directory seen through a FUSE mount whose
// attribute cache lasts 30 s (as NFS caches them) still shows a new stamp
// at once when another "host" adds a file: Stamp asks the server, not the
// cache. (With fstat alone, this fails.)
func TestStampAcrossMounts(t *testing.T) {
	backing := t.TempDir()
	hostA := bindfstest.Mount(t, backing, "-o", "attr_timeout=30,entry_timeout=30,negative_timeout=0")
	hostB := bindfstest.Mount(t, backing)
	d, err := safedir.Open(hostA)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	before, err := d.Stamp()
	if err != nil {
		t.Fatal(err)
	}
	b, err := safedir.Open(hostB)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Publish("from-b", []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	after, err := d.Stamp()
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Errorf("stamp on host A unchanged after host B added a file: %+v", after)
	}
}
