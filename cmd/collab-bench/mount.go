package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// mounts makes bindfs views of a folder, each standing for one host of a
// shared NFS export (as internal/bindfstest does for tests), and unmounts
// whatever is left at the end.
type mounts struct {
	mu     sync.Mutex
	points map[string]bool
}

// mount mounts backing at the new folder at with bindfs' defaults (FUSE
// caches attributes and entries for 1 s).
func (m *mounts) mount(ctx context.Context, backing, at string) error {
	bin, err := exec.LookPath("bindfs")
	if err != nil {
		return fmt.Errorf("bindfs: %w", err)
	}
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, backing, at)
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("bindfs %s %s: %v: %s", backing, at, err, tail(string(out), 500))
	}
	m.mu.Lock()
	if m.points == nil {
		m.points = make(map[string]bool)
	}
	m.points[at] = true
	m.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); !mounted(at); {
		if time.Now().After(deadline) {
			return fmt.Errorf("bindfs: %s did not appear in /proc/self/mountinfo", at)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// unmount unmounts at, trying fusermount3, fusermount, umount and finally a
// lazy umount.
func (m *mounts) unmount(at string) error {
	m.mu.Lock()
	delete(m.points, at)
	m.mu.Unlock()
	var msgs []string
	for _, argv := range [][]string{
		{"fusermount3", "-u", at},
		{"fusermount", "-u", at},
		{"umount", at},
		{"umount", "-l", at},
	} {
		if !mounted(at) {
			return nil
		}
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err == nil {
			// The mount table can lag the command a little.
			for deadline := time.Now().Add(5 * time.Second); mounted(at) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if !mounted(at) {
				return nil
			}
		}
		msgs = append(msgs, strings.Join(argv, " ")+": "+strings.TrimSpace(string(out)))
	}
	if mounted(at) {
		return fmt.Errorf("cannot unmount %s: %s", at, strings.Join(msgs, "; "))
	}
	return nil
}

// unmountAll unmounts every mount still up.
func (m *mounts) unmountAll() error {
	m.mu.Lock()
	var points []string
	for p := range m.points {
		points = append(points, p)
	}
	m.mu.Unlock()
	var errs []error
	for _, p := range points {
		errs = append(errs, m.unmount(p))
	}
	return errors.Join(errs...)
}

// mounted reports whether path is a mount point, from /proc/self/mountinfo.
func mounted(path string) bool {
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
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
