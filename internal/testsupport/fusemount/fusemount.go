// Package fusemount mounts and unmounts bindfs (FUSE) views of a folder,
// which collab's tests, benchmark and fault scenarios use to stand for
// other NFS hosts: writes through one view are invisible to inotify on
// another, and "-o attr_timeout=N,entry_timeout=N,negative_timeout=N" gives
// a view NFS-like caches.
package fusemount

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Bindfs mounts backing at the folder at (created if missing) with bindfs,
// passing opts (such as "-o", "attr_timeout=0") before the paths, and
// waits until the mount is in the mount table.
func Bindfs(ctx context.Context, backing, at string, opts ...string) error {
	bin, err := exec.LookPath("bindfs")
	if err != nil {
		return fmt.Errorf("bindfs: %w", err)
	}
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	args := append(append([]string{}, opts...), backing, at)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("bindfs %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	for deadline := time.Now().Add(10 * time.Second); !Mounted(at); {
		if time.Now().After(deadline) {
			return fmt.Errorf("bindfs: %s did not appear in /proc/self/mountinfo", at)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// Unmount unmounts a FUSE (or any) mount, trying fusermount3, fusermount,
// umount and finally a lazy umount. A path that is not mounted is fine.
func Unmount(at string) error {
	var msgs []string
	for _, argv := range [][]string{
		{"fusermount3", "-u", at},
		{"fusermount", "-u", at},
		{"umount", at},
		{"umount", "-l", at},
	} {
		if !Mounted(at) {
			return nil
		}
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err == nil {
			// The mount table can lag the command a little.
			for deadline := time.Now().Add(5 * time.Second); Mounted(at) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if !Mounted(at) {
				return nil
			}
		}
		msgs = append(msgs, strings.Join(argv, " ")+": "+strings.TrimSpace(string(out)))
	}
	if Mounted(at) {
		return fmt.Errorf("cannot unmount %s: %s", at, strings.Join(msgs, "; "))
	}
	return nil
}

// Works reports whether bindfs can mount here, by mounting a probe in dir.
func Works(dir string) error {
	src, at := filepath.Join(dir, "probe-src"), filepath.Join(dir, "probe-mnt")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(src)
	defer os.Remove(at)
	if err := Bindfs(context.Background(), src, at); err != nil {
		return err
	}
	if err := Unmount(at); err != nil {
		return errors.Join(errors.New("bindfs: the probe mount stays"), err)
	}
	return nil
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
		if len(fields) > 4 && unescape(fields[4]) == path {
			return true
		}
	}
	return false
}

// unescape undoes /proc/self/mountinfo's octal escapes (\040 etc.).
func unescape(s string) string {
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
