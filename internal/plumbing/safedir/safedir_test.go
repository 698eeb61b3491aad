package safedir_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/testsupport/tmpfs"
)

// open returns a Dir on a new temp directory, closed at the end of the test.
func open(t *testing.T) (*safedir.Dir, string) {
	t.Helper()
	path := t.TempDir()
	d, err := safedir.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, path
}

// names lists path's entries, sorted.
func names(t *testing.T, path string) []string {
	t.Helper()
	entries, err := os.ReadDir(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// noTemps fails the test if path holds a temp file.
func noTemps(t *testing.T, path string) {
	t.Helper()
	for _, name := range names(t, path) {
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp") {
			t.Errorf("temp file %q left in %s", name, path)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPublish: Publish, and PublishUnsynced followed by Sync, leave the
// one name with its content, never replace it, and leave no temp name.
func TestPublish(t *testing.T) {
	for _, tt := range []struct {
		name    string
		publish func(d *safedir.Dir, name string, data []byte) error
	}{
		{"synced", func(d *safedir.Dir, name string, data []byte) error { return d.Publish(name, data, 0o644) }},
		{"unsynced", func(d *safedir.Dir, name string, data []byte) error {
			if err := d.PublishUnsynced(name, data, 0o644); err != nil {
				return err
			}
			return d.Sync()
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, path := open(t)
			if err := tt.publish(d, "a.json", []byte("first")); err != nil {
				t.Fatalf("publish: %v", err)
			}
			if err := tt.publish(d, "a.json", []byte("second")); !errors.Is(err, fs.ErrExist) {
				t.Errorf("publish again: %v, want ErrExist", err)
			}
			if got, want := readFile(t, filepath.Join(path, "a.json")), "first"; got != want {
				t.Errorf("content = %q, want %q", got, want)
			}
			if got, want := names(t, path), []string{"a.json"}; !slices.Equal(got, want) {
				t.Errorf("directory = %q, want %q", got, want)
			}
			fi, err := os.Stat(filepath.Join(path, "a.json"))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Sys().(*syscall.Stat_t).Nlink != 1 {
				t.Errorf("nlink = %d, want 1 (the temp name must be gone)", fi.Sys().(*syscall.Stat_t).Nlink)
			}
		})
	}
}

func TestPublishEmpty(t *testing.T) {
	d, path := open(t)
	if err := d.Publish("empty", nil, 0o644); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if got := readFile(t, filepath.Join(path, "empty")); got != "" {
		t.Errorf("content = %q, want empty", got)
	}
}

func TestPublishNeverReplaces(t *testing.T) {
	tests := []struct {
		name     string
		existing func(t *testing.T, path string) // makes "x" exist
		check    func(t *testing.T, path string) // "x" is unchanged
	}{
		{
			name: "regular file",
			existing: func(t *testing.T, path string) {
				write(t, filepath.Join(path, "x"), "old")
			},
			check: func(t *testing.T, path string) {
				if got := readFile(t, filepath.Join(path, "x")); got != "old" {
					t.Errorf("content = %q, want %q", got, "old")
				}
			},
		},
		{
			name: "directory",
			existing: func(t *testing.T, path string) {
				if err := os.Mkdir(filepath.Join(path, "x"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, path string) {
				if fi, err := os.Lstat(filepath.Join(path, "x")); err != nil || !fi.IsDir() {
					t.Errorf("x is no longer a directory: %v, %v", fi, err)
				}
			},
		},
		{
			name: "dangling symlink out of the directory",
			existing: func(t *testing.T, path string) {
				target := filepath.Join(t.TempDir(), "outside")
				if err := os.Symlink(target, filepath.Join(path, "x")); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if _, err := os.Lstat(target); err == nil {
						t.Errorf("Publish wrote through the symlink to %s", target)
					}
				})
			},
			check: func(t *testing.T, path string) {
				if fi, err := os.Lstat(filepath.Join(path, "x")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("x is no longer a symlink: %v, %v", fi, err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, path := open(t)
			tt.existing(t, path)
			err := d.Publish("x", []byte("new"), 0o644)
			if !errors.Is(err, fs.ErrExist) {
				t.Fatalf("Publish over an existing name = %v, want an error wrapping fs.ErrExist", err)
			}
			tt.check(t, path)
			noTemps(t, path)
			if got, want := names(t, path), []string{"x"}; !slices.Equal(got, want) {
				t.Errorf("directory = %q, want %q", got, want)
			}
		})
	}
}

func TestPublishTwice(t *testing.T) {
	d, path := open(t)
	if err := d.Publish("m", []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := d.Publish("m", []byte("two"), 0o644)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Publish = %v, want an error wrapping fs.ErrExist", err)
	}
	if got := readFile(t, filepath.Join(path, "m")); got != "one" {
		t.Errorf("content = %q, want %q", got, "one")
	}
	noTemps(t, path)
}

// TestPublishRace has many goroutines publish one name: exactly one wins
// and the file holds exactly the winner's bytes.
func TestPublishRace(t *testing.T) {
	d, path := open(t)
	const n = 32
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = d.Publish("m", bytes.Repeat([]byte{byte('a' + i%26)}, 4096+i), 0o644)
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("writers %d and %d both published", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, fs.ErrExist):
			t.Errorf("writer %d: %v, want nil or fs.ErrExist", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer published")
	}
	want := bytes.Repeat([]byte{byte('a' + winner%26)}, 4096+winner)
	if got := readFile(t, filepath.Join(path, "m")); got != string(want) {
		t.Errorf("content is not the winner's (%d bytes, want %d)", len(got), len(want))
	}
	noTemps(t, path)
}

func TestReplace(t *testing.T) {
	d, path := open(t)
	for _, content := range []string{"one", "two, longer", "3"} {
		if err := d.Replace("hb.json", []byte(content), 0o644); err != nil {
			t.Fatalf("Replace(%q): %v", content, err)
		}
		if got := readFile(t, filepath.Join(path, "hb.json")); got != content {
			t.Errorf("content = %q, want %q", got, content)
		}
	}
	if got, want := names(t, path), []string{"hb.json"}; !slices.Equal(got, want) {
		t.Errorf("directory = %q, want %q", got, want)
	}
}

func TestReplaceDoesNotFollowSymlink(t *testing.T) {
	d, path := open(t)
	target := filepath.Join(t.TempDir(), "outside")
	write(t, target, "secret")
	if err := os.Symlink(target, filepath.Join(path, "hb.json")); err != nil {
		t.Fatal(err)
	}
	if err := d.Replace("hb.json", []byte("new"), 0o644); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if got := readFile(t, target); got != "secret" {
		t.Errorf("symlink target = %q, want it untouched", got)
	}
	if fi, err := os.Lstat(filepath.Join(path, "hb.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("hb.json = %v, %v; want a regular file replacing the symlink", fi, err)
	}
}

func TestReadFile(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret")
	write(t, outside, "secret")
	tests := []struct {
		name    string
		make    func(t *testing.T, path string) // creates "f"
		limit   int64
		want    string
		wantErr error
	}{
		{
			name:  "regular",
			make:  func(t *testing.T, path string) { write(t, filepath.Join(path, "f"), "hello") },
			limit: 5,
			want:  "hello",
		},
		{
			name:  "empty",
			make:  func(t *testing.T, path string) { write(t, filepath.Join(path, "f"), "") },
			limit: 5,
			want:  "",
		},
		{
			name:    "one byte over the limit",
			make:    func(t *testing.T, path string) { write(t, filepath.Join(path, "f"), "hello!") },
			limit:   5,
			wantErr: safedir.ErrTooLarge,
		},
		{
			name: "symlink to a file outside",
			make: func(t *testing.T, path string) {
				if err := os.Symlink(outside, filepath.Join(path, "f")); err != nil {
					t.Fatal(err)
				}
			},
			limit:   100,
			wantErr: safedir.ErrSymlink,
		},
		{
			name: "symlink to a file inside",
			make: func(t *testing.T, path string) {
				write(t, filepath.Join(path, "g"), "inside")
				if err := os.Symlink("g", filepath.Join(path, "f")); err != nil {
					t.Fatal(err)
				}
			},
			limit:   100,
			wantErr: safedir.ErrSymlink,
		},
		{
			name: "dangling symlink",
			make: func(t *testing.T, path string) {
				if err := os.Symlink("nowhere", filepath.Join(path, "f")); err != nil {
					t.Fatal(err)
				}
			},
			limit:   100,
			wantErr: safedir.ErrSymlink,
		},
		{
			name: "directory",
			make: func(t *testing.T, path string) {
				if err := os.Mkdir(filepath.Join(path, "f"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			limit:   100,
			wantErr: safedir.ErrNotRegular,
		},
		{
			name: "FIFO without a writer",
			make: func(t *testing.T, path string) {
				if err := unix.Mkfifo(filepath.Join(path, "f"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			limit:   100,
			wantErr: safedir.ErrNotRegular,
		},
		{
			name:    "missing",
			make:    func(t *testing.T, path string) {},
			limit:   100,
			wantErr: fs.ErrNotExist,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, path := open(t)
			tt.make(t, path)
			var (
				got []byte
				err error
			)
			within(t, 10*time.Second, func() { got, _, err = d.ReadFile("f", tt.limit) })
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ReadFile = %q, %v; want an error wrapping %v", got, err, tt.wantErr)
				}
				if bytes.Contains(got, []byte("secret")) {
					t.Errorf("ReadFile returned the symlink target's content")
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadFile: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("ReadFile = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReadFileSizeInfo checks the FileInfo ReadFile returns.
func TestReadFileSizeInfo(t *testing.T) {
	d, path := open(t)
	write(t, filepath.Join(path, "f"), "12345")
	_, fi, err := d.ReadFile("f", 10)
	if err != nil {
		t.Fatal(err)
	}
	if fi == nil || fi.Size() != 5 || !fi.Mode().IsRegular() {
		t.Errorf("FileInfo = %v, want a regular file of 5 bytes", fi)
	}
}

func TestBadNames(t *testing.T) {
	bad := []string{"", ".", "..", "a/b", "../x", "/abs", "a\x00b"}
	ops := []struct {
		name string
		op   func(d *safedir.Dir, name string) error
	}{
		{"Publish", func(d *safedir.Dir, n string) error { return d.Publish(n, []byte("x"), 0o644) }},
		{"Replace", func(d *safedir.Dir, n string) error { return d.Replace(n, []byte("x"), 0o644) }},
		{"ReadFile", func(d *safedir.Dir, n string) error { _, _, err := d.ReadFile(n, 10); return err }},
		{"Lstat", func(d *safedir.Dir, n string) error { _, err := d.Lstat(n); return err }},
		{"Remove", func(d *safedir.Dir, n string) error { return d.Remove(n) }},
		{"Rename from", func(d *safedir.Dir, n string) error { return d.Rename(n, "ok") }},
		{"Rename to", func(d *safedir.Dir, n string) error { return d.Rename("src", n) }},
		{"Link from", func(d *safedir.Dir, n string) error { return d.Link(n, "ok") }},
		{"Link to", func(d *safedir.Dir, n string) error { return d.Link("src", n) }},
	}
	for _, op := range ops {
		for _, name := range bad {
			t.Run(fmt.Sprintf("%s/%q", op.name, name), func(t *testing.T) {
				parent := t.TempDir()
				path := filepath.Join(parent, "d")
				if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(path, "src"), "src")
				d, err := safedir.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				if err := op.op(d, name); !errors.Is(err, safedir.ErrBadName) {
					t.Errorf("%s(%q) = %v, want an error wrapping ErrBadName", op.name, name, err)
				}
				if got, want := names(t, path), []string{"src"}; !slices.Equal(got, want) {
					t.Errorf("directory = %q, want %q", got, want)
				}
				if got, want := names(t, parent), []string{"d"}; !slices.Equal(got, want) {
					t.Errorf("parent = %q, want %q", got, want)
				}
			})
		}
	}
}

func TestLink(t *testing.T) {
	d, path := open(t)
	write(t, filepath.Join(path, "a"), "A")
	write(t, filepath.Join(path, "b"), "B")
	if err := d.Link("a", "c"); err != nil {
		t.Fatalf("Link(a, c): %v", err)
	}
	if got := readFile(t, filepath.Join(path, "c")); got != "A" {
		t.Errorf("c = %q, want %q", got, "A")
	}
	if err := d.Link("a", "b"); !errors.Is(err, fs.ErrExist) {
		t.Errorf("Link(a, b) = %v, want an error wrapping fs.ErrExist", err)
	}
	if got := readFile(t, filepath.Join(path, "b")); got != "B" {
		t.Errorf("b = %q after a failed Link, want %q", got, "B")
	}
	// Linking a name to itself is the "lost reply" case: one file, success.
	if err := d.Link("a", "a"); err != nil {
		t.Errorf("Link(a, a) = %v, want nil (same file)", err)
	}
}

func TestRename(t *testing.T) {
	d, path := open(t)
	write(t, filepath.Join(path, "a"), "A")
	write(t, filepath.Join(path, "b"), "B")
	if err := d.Rename("a", "b"); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	if got := readFile(t, filepath.Join(path, "b")); got != "A" {
		t.Errorf("b = %q, want %q", got, "A")
	}
	if got, want := names(t, path), []string{"b"}; !slices.Equal(got, want) {
		t.Errorf("directory = %q, want %q", got, want)
	}
}

// TestRenameRace: of several renames of one name, one succeeds and the
// others get fs.ErrNotExist (the claim protocol relies on this).
func TestRenameRace(t *testing.T) {
	d, path := open(t)
	write(t, filepath.Join(path, "job"), "job")
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = d.Rename("job", fmt.Sprintf("job.%d", i)) })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, fs.ErrNotExist):
			t.Errorf("rename %d: %v, want nil or fs.ErrNotExist", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d renames succeeded, want 1", won)
	}
	if got := len(names(t, path)); got != 1 {
		t.Errorf("%d files left, want 1", got)
	}
}

func TestRemove(t *testing.T) {
	d, path := open(t)
	write(t, filepath.Join(path, "a"), "A")
	if err := d.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove("a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("second Remove = %v, want fs.ErrNotExist", err)
	}
	if err := os.Mkdir(filepath.Join(path, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove("dir"); err == nil {
		t.Error("Remove(dir) succeeded, want an error for a directory")
	}
}

func TestLstat(t *testing.T) {
	d, path := open(t)
	if err := os.Symlink("nowhere", filepath.Join(path, "l")); err != nil {
		t.Fatal(err)
	}
	fi, err := d.Lstat("l")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat(l).Mode() = %v, want a symlink", fi.Mode())
	}
}

func TestCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "c")
	d, err := safedir.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Path() != path {
		t.Errorf("Path() = %q, want %q", d.Path(), path)
	}
	if err := d.Publish("x", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(path, "x")); err != nil {
		t.Error(err)
	}
	// Create on an existing directory is fine.
	d2, err := safedir.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	d2.Close()
}

func TestOpenMissing(t *testing.T) {
	_, err := safedir.Open(filepath.Join(t.TempDir(), "missing"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestReadDir(t *testing.T) {
	d, path := open(t)
	for _, n := range []string{"b", "a", ".c"} {
		write(t, filepath.Join(path, n), n)
	}
	entries, err := d.ReadDir()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	slices.Sort(got)
	if want := []string{".c", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("ReadDir = %q, want %q", got, want)
	}
	// A second listing sees a file made after the first one.
	write(t, filepath.Join(path, "d"), "d")
	entries, err = d.ReadDir()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Errorf("second ReadDir has %d entries, want 4", len(entries))
	}
}

// TestFullDisk publishes into a 64 KiB tmpfs: the write fails, and neither
// the final name nor a temp file is left (research notes §7.5 saw a
// 65,536-byte partial temp file left by a naive writer). Replace keeps the
// old content.
func TestFullDisk(t *testing.T) {
	path, err := tmpfs.Mount(t, "64k")
	if err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v", err)
	}
	d, err := safedir.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Replace("hb.json", []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 100<<10)

	if err := d.Publish("big", big, 0o644); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("Publish on a full disk = %v, want ENOSPC", err)
	}
	if err := d.Replace("hb.json", big, 0o644); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("Replace on a full disk = %v, want ENOSPC", err)
	}
	if got := readFile(t, filepath.Join(path, "hb.json")); got != "old" {
		t.Errorf("hb.json = %q after a failed Replace, want %q", got, "old")
	}
	if got, want := names(t, path), []string{"hb.json"}; !slices.Equal(got, want) {
		t.Errorf("directory = %q, want %q", got, want)
	}
	// The space is free again: a small publish works.
	if err := d.Publish("small", []byte("ok"), 0o644); err != nil {
		t.Errorf("Publish after the failure: %v", err)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// within runs f and fails the test if it does not return within d (a hung
// open of a FIFO, say). f keeps running in the background if it hangs.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still running after %v", d)
	}
}
