package safedir_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/safedir"
)

// TestReserve: Reserve makes a file of the size with its blocks allocated,
// keeps one that is big enough, replaces a smaller one or a symlink (never
// following it), and refuses a bad name.
func TestReserve(t *testing.T) {
	dir := t.TempDir()
	d, err := safedir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const size = 1 << 20
	allocated := func(name string) (int64, int64) {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(dir, name), &st); err != nil {
			t.Fatal(err)
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			t.Fatalf("%s is not a regular file", name)
		}
		return st.Size, st.Blocks * 512
	}
	if err := d.Reserve(".reserve", size); err != nil {
		t.Fatal(err)
	}
	if n, blocks := allocated(".reserve"); n != size || blocks < size {
		t.Errorf("reserve of %d bytes, %d allocated; want %d of each", n, blocks, size)
	}
	before, _ := os.Stat(filepath.Join(dir, ".reserve"))
	if err := d.Reserve(".reserve", size/2); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(filepath.Join(dir, ".reserve")); !os.SameFile(before, after) {
		t.Error("a big enough reserve was made again")
	}
	if err := d.Reserve(".reserve", 2*size); err != nil {
		t.Fatal(err)
	}
	if n, blocks := allocated(".reserve"); n != 2*size || blocks < 2*size {
		t.Errorf("grown reserve of %d bytes, %d allocated; want %d", n, blocks, 2*size)
	}

	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := d.Reserve("link", size); err != nil {
		t.Fatal(err)
	}
	allocated("link")
	if data, _ := os.ReadFile(outside); string(data) != "keep" {
		t.Errorf("the symlink's target was written: %q", data)
	}

	if err := d.Reserve("../x", size); !errors.Is(err, safedir.ErrBadName) {
		t.Errorf("Reserve(../x) = %v, want ErrBadName", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if safedir.IsTemp(e.Name()) {
			t.Errorf("temp file %s left behind", e.Name())
		}
	}
}
