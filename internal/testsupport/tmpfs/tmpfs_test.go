package tmpfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestUnmountWaitsForBusy: a file held open for a moment (as by a child
// forked before it execs) delays the unmount instead of failing it.
func TestUnmountWaitsForBusy(t *testing.T) {
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root): %v", err)
	}
	f, err := os.Create(filepath.Join(dir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Unmount(dir, 0); err != unix.EBUSY {
		t.Fatalf("unmount with a file open: %v, want EBUSY", err)
	}
	time.AfterFunc(200*time.Millisecond, func() { f.Close() })
	if err := unmount(dir); err != nil {
		t.Fatalf("unmount: %v", err)
	}
}
