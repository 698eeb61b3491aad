package rotlog

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/safedir"
)

// logger logs JSON lines to dir/name, as a watcher's log does.
func logger(t *testing.T, dir, name string) (*slog.Logger, func(), error) {
	t.Helper()
	d, err := safedir.Create(dir)
	if err != nil {
		return nil, nil, err
	}
	f, err := Open(d, name, MaxBytes, Backups)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return slog.New(slog.NewJSONHandler(f, nil)), func() { f.Close() }, nil
}

// TestWatchLogRotates: logs/AGENT.log never grows past MaxBytes; the
// old ones are AGENT.log.1 … .Backups, no more, and nothing is lost
// from the newest.
func TestWatchLogRotates(t *testing.T) {
	root := t.TempDir()
	log, done, err := logger(t, filepath.Join(root, "logs"), "claude.log")
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 1<<20)
	const records = 5*MaxBytes>>20 + 3
	for i := range records {
		log.Info("record", "i", i, "pad", big)
	}
	log.Info("last")
	done()
	logs := filepath.Join(root, "logs")
	entries, err := os.ReadDir(logs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > MaxBytes {
			t.Errorf("%s is %d bytes, more than %d", e.Name(), fi.Size(), MaxBytes)
		}
	}
	want := []string{"claude.log"}
	for k := 1; k <= Backups; k++ {
		want = append(want, "claude.log."+string(rune('0'+k)))
	}
	if !slices.Equal(names, want) {
		t.Errorf("logs = %v, want %v", names, want)
	}
	cur, err := os.ReadFile(filepath.Join(logs, "claude.log"))
	if err != nil || !strings.Contains(string(cur), `"msg":"last"`) {
		t.Errorf("claude.log does not end with the last record (%v)", err)
	}
	prev, err := os.ReadFile(filepath.Join(logs, "claude.log.1"))
	if err != nil || !strings.Contains(string(prev), `"i":`) || strings.Count(string(prev)+string(cur), "\n") < MaxBytes>>20 {
		t.Errorf("claude.log.1 does not hold the records before (%v)", err)
	}
}

// TestWatchLogRotatedElsewhere: when another watcher of the agent rotated
// the log first, this one writes to the new file and does not rotate it
// again.
func TestWatchLogRotatedElsewhere(t *testing.T) {
	root := t.TempDir()
	log1, done1, err := logger(t, filepath.Join(root, "logs"), "claude.log")
	if err != nil {
		t.Fatal(err)
	}
	defer done1()
	log2, done2, err := logger(t, filepath.Join(root, "logs"), "claude.log")
	if err != nil {
		t.Fatal(err)
	}
	defer done2()
	big := strings.Repeat("x", MaxBytes/2)
	log1.Info("a", "pad", big)
	log2.Info("b", "pad", big) // log2 counts log1's half too
	log1.Info("c", "pad", big) // log1 rotates: the file is a and b
	log2.Info("d", "pad", big) // log2 finds it rotated: reopens
	data, err := os.ReadFile(filepath.Join(root, "logs", "claude.log"))
	if err != nil || !strings.Contains(string(data), `"msg":"c"`) || !strings.Contains(string(data), `"msg":"d"`) {
		t.Errorf("claude.log should hold c and d (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(root, "logs", "claude.log.2")); err == nil {
		t.Error("rotated twice")
	}
}
