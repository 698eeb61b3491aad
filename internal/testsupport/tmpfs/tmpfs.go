// Package tmpfs mounts a small tmpfs over a test's temp folder, for tests
// of a full disk (a tmpfs of a few KiB or MiB fills up for real) and of
// fast writes. Mounting needs root (or CAP_SYS_ADMIN); without it Mount
// returns the error and the test decides: skip, or use the temp folder's
// own filesystem.
package tmpfs

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// busyFor is how long the cleanup retries an unmount the kernel finds
// busy. A child that another parallel test forks holds copies of every
// open file until it execs (close-on-exec acts only then), so a file the
// code under test closed just before the cleanup can keep the mount busy
// for that moment; a file the code never closed keeps it busy for good,
// and the test fails.
const busyFor = 5 * time.Second

// Mount mounts a tmpfs of size ("64k", "4m") over a new temp folder of t
// and returns the folder; t's cleanup unmounts it (and fails t when it
// cannot).
func Mount(t testing.TB, size string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		return "", err
	}
	t.Cleanup(func() {
		if err := unmount(dir); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			// The temp folder's own cleanup cannot remove a mount point
			// still in use: detach it, so that it can.
			_ = unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
	return dir, nil
}

// unmount unmounts dir, trying again while it is busy for at most busyFor.
func unmount(dir string) error {
	deadline := time.Now().Add(busyFor)
	for {
		err := unix.Unmount(dir, 0)
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
