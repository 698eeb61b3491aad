// Package bindfstest mounts a second "host" view of a folder with bindfs
// (FUSE), which is how collab's tests model two machines sharing one NFS
// export on a single Linux box: writes through one mount are invisible to
// inotify on the other, and attribute caches can be made NFS-like with
// "-o attr_timeout=N,entry_timeout=N,negative_timeout=N".
//
// Without bindfs or FUSE a test that asks for a mount is skipped, or fails
// when $COLLAB_TEST_REQUIRE_BINDFS is "1" (CI sets it).
package bindfstest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RequireEnv, when "1", turns a missing bindfs or a failed mount into a test
// failure instead of a skip.
const RequireEnv = "COLLAB_TEST_REQUIRE_BINDFS"

// Mount mounts backing at a new folder with bindfs, passing opts (such as
// "-o", "attr_timeout=0") before the paths, and returns the mount point. It
// is unmounted when the test ends.
func Mount(t testing.TB, backing string, opts ...string) string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("bindfs required ("+RequireEnv+"=1): "+format, args...)
		}
		t.Skipf("bindfs unavailable: "+format, args...)
	}
	bin, err := exec.LookPath("bindfs")
	if err != nil {
		unavailable("%v", err)
	}
	// t.TempDir's own clean-up was registered by an earlier call (backing
	// is normally one) and so runs after the unmount registered below.
	mnt, err := os.MkdirTemp(t.TempDir(), "mnt")
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, opts...), backing, mnt)
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		unavailable("bindfs %s: %v: %s", strings.Join(args, " "), err, out)
	}
	t.Cleanup(func() { Unmount(t, mnt) })
	deadline := time.Now().Add(10 * time.Second)
	for !Mounted(mnt) {
		if time.Now().After(deadline) {
			unavailable("%s did not appear in /proc/self/mountinfo", mnt)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return mnt
}

// Unmount unmounts a FUSE mount, trying fusermount3, fusermount, umount and
// finally a lazy umount.
func Unmount(t testing.TB, mnt string) {
	t.Helper()
	var msgs []string
	for _, cmd := range [][]string{
		{"fusermount3", "-u", mnt},
		{"fusermount", "-u", mnt},
		{"umount", mnt},
		{"umount", "-l", mnt},
	} {
		if !Mounted(mnt) {
			return
		}
		out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
		if err == nil {
			// The mount table can lag the command a little.
			for deadline := time.Now().Add(5 * time.Second); Mounted(mnt) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if !Mounted(mnt) {
				return
			}
		}
		msgs = append(msgs, strings.Join(cmd, " ")+": "+strings.TrimSpace(string(out)))
	}
	if Mounted(mnt) {
		t.Errorf("cannot unmount %s:\n%s", mnt, strings.Join(msgs, "\n"))
	}
}

// Mounted reports whether path is a mount point, from /proc/self/mountinfo.
func Mounted(path string) bool {
	path = filepath.Clean(path)
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		// Field 5 is the mount point, with spaces and such escaped as \040.
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && unescapeMount(fields[4]) == path {
			return true
		}
	}
	return false
}

// unescapeMount undoes /proc/self/mountinfo's octal escapes (\040 etc.).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			c := (s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0')
			b.WriteByte(c)
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
