package prompt

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadMemoryFresh(t *testing.T) {
	p := filepath.Join(t.TempDir(), "CURRENT-STATE.md")
	write(t, p, "phase 1")
	first := LoadMemory([]string{p}, 0)
	write(t, p, "phase 2, longer")
	second := LoadMemory([]string{p}, 0)
	if first[0].Text != "phase 1" || second[0].Text != "phase 2, longer" {
		t.Errorf("texts %q then %q, want each load to read the file anew", first[0].Text, second[0].Text)
	}
	if second[0].Size != 15 || second[0].Truncated || second[0].Err != nil {
		t.Errorf("second load = %+v", second[0])
	}
}

func TestLoadMemoryCap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		content  string
		max      int
		want     string
		truncate bool
	}{
		{"under", "abc", 4, "abc", false},
		{"exact", "abcd", 4, "abcd", false},
		{"over", "abcde", 4, "abcd", true},
		{"in 2-byte rune", "aéé", 4, "aé", true},    // a C3 A9 | C3 A9
		{"after 2-byte rune", "aéé", 3, "aé", true}, // a C3 A9 | C3
		{"in 4-byte rune", "ab😀", 5, "ab", true},    // a b F0 9F 98 | 80
		{"in 3-byte rune", "€€", 4, "€", true},      // E2 82 AC E2 | 82 AC
		{"invalid bytes", "\xff\xff\xff", 2, "\xff\xff", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.md")
			write(t, p, tc.content)
			m := LoadMemory([]string{p}, tc.max)[0]
			if m.Text != tc.want || m.Truncated != tc.truncate || m.Size != int64(len(tc.content)) || m.Err != nil {
				t.Errorf("got %+v, want Text %q, Truncated %v, Size %d", m, tc.want, tc.truncate, len(tc.content))
			}
			if utf8.ValidString(tc.content) && !utf8.ValidString(m.Text) {
				t.Errorf("cut inside a character: %q", m.Text)
			}
		})
	}
}

func TestLoadMemoryDefaultCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.md")
	write(t, p, strings.Repeat("x", 100<<10))
	m := LoadMemory([]string{p}, 0)[0]
	if len(m.Text) != DefaultMemoryBytes || !m.Truncated || m.Size != 100<<10 {
		t.Errorf("len(Text) %d, Truncated %v, Size %d", len(m.Text), m.Truncated, m.Size)
	}
}

func TestLoadMemoryUnreadable(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.md")
	write(t, ok, "fine")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret.md")
	write(t, secret, "x")
	os.Chmod(secret, 0)
	paths := []string{filepath.Join(dir, "missing.md"), dir, fifo, ok, secret}

	got := LoadMemory(paths, 0) // must not block on the FIFO
	if len(got) != len(paths) {
		t.Fatalf("%d entries for %d paths", len(got), len(paths))
	}
	for i, p := range paths {
		if got[i].Path != p {
			t.Errorf("entry %d is %q, want %q", i, got[i].Path, p)
		}
	}
	check := func(m Memory, is error, msg string) {
		t.Helper()
		if !errors.Is(m.Err, is) || m.Err.Error() != msg || m.Text != "" {
			t.Errorf("%s: Err %v, Text %q; want %q", m.Path, m.Err, m.Text, msg)
		}
	}
	check(got[0], fs.ErrNotExist, "no such file or directory")
	check(got[1], errNotRegular, "not a regular file")
	check(got[2], errNotRegular, "not a regular file")
	if got[3].Text != "fine" || got[3].Err != nil {
		t.Errorf("readable file after failures: %+v", got[3])
	}
	if os.Geteuid() != 0 {
		check(got[4], fs.ErrPermission, "permission denied")
	}
	if LoadMemory(nil, 0) != nil {
		t.Error("LoadMemory(nil) is not nil")
	}
}
