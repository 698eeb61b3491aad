// Package bindfstest mounts a second "host" view of a folder with bindfs
// (FUSE), which is how collab's tests model two machines sharing one NFS
// export on a single Linux box: writes through one mount are invisible to
// inotify on the other, and attribute caches can be made NFS-like with
// "-o attr_timeout=N,entry_timeout=N,negative_timeout=N". The mounting
// itself is package internal/fusemount.
//
// Without bindfs or FUSE a test that asks for a mount is skipped, or fails
// when $COLLAB_TEST_REQUIRE_BINDFS is "1" (CI sets it).
package bindfstest

import (
	"context"
	"os"
	"testing"

	"github.com/collabdev/collab/internal/testsupport/fusemount"
)

// RequireEnv, when "1", turns a missing bindfs or a failed mount into a test
// failure instead of a skip.
const RequireEnv = "COLLAB_TEST_REQUIRE_BINDFS"

// Mount mounts backing at a new folder with bindfs, passing opts (such as
// "-o", "attr_timeout=0") before the paths, and returns the mount point. It
// is unmounted when the test ends.
func Mount(t testing.TB, backing string, opts ...string) string {
	t.Helper()
	// t.TempDir's own clean-up was registered by an earlier call (backing
	// is normally one) and so runs after the unmount registered below.
	mnt, err := os.MkdirTemp(t.TempDir(), "mnt")
	if err != nil {
		t.Fatal(err)
	}
	if err := fusemount.Bindfs(context.Background(), backing, mnt, opts...); err != nil {
		fusemount.Unmount(mnt)
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("bindfs required (%s=1): %v", RequireEnv, err)
		}
		t.Skipf("bindfs unavailable: %v", err)
	}
	t.Cleanup(func() {
		if err := fusemount.Unmount(mnt); err != nil {
			t.Error(err)
		}
	})
	return mnt
}
