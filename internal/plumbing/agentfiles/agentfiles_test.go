package agentfiles

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestEach(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"alice.json":        `ok`,
		"bob.json":          `bad`,
		"gone.json":         `gone`,
		"-x.json":           `ok`,
		".alice.json.1.tmp": `ok`,
		"notes.txt":         `ok`,
		"carol.json":        `ok`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var read []string
	skips, err := Each(dir, func(d *safedir.Dir, agent string) error {
		data, _, err := d.ReadFile(Name(agent), 100)
		if err != nil {
			return err
		}
		switch string(data) {
		case "bad":
			return errors.New("does not decode")
		case "gone":
			return fmt.Errorf("read: %w", fs.ErrNotExist)
		}
		read = append(read, agent)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(read)
	if want := []string{"alice", "carol"}; !slices.Equal(read, want) {
		t.Errorf("read %v, want %v", read, want)
	}
	var got []string
	for _, s := range skips {
		got = append(got, s.File+"→"+s.Agent())
	}
	slices.Sort(got)
	if want := []string{"-x.json→", "bob.json→bob"}; !slices.Equal(got, want) {
		t.Errorf("skips %v, want %v", got, want)
	}
	for _, s := range skips {
		if s.File == "-x.json" && !errors.Is(s.Err, tree.ErrBadName) {
			t.Errorf("skip %v: want ErrBadName", s)
		}
	}

	if skips, err := Each(filepath.Join(dir, "missing"), nil); err != nil || skips != nil {
		t.Errorf("missing folder: %v, %v; want nothing", skips, err)
	}
	file := filepath.Join(dir, "alice.json")
	if _, err := Each(file, nil); err == nil {
		t.Error("a file as the folder: no error")
	}
}

func TestSkipString(t *testing.T) {
	s := Skip{File: "a.json", Err: &fs.PathError{Op: "open", Path: "/x/a.json", Err: fs.ErrPermission}}
	if got, want := s.String(), "a.json: permission denied"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func TestSkipAgent(t *testing.T) {
	for file, want := range map[string]string{"codex.json": "codex", "bad name.json": "", "x.txt": "", ".json": ""} {
		if got := (Skip{File: file}).Agent(); got != want {
			t.Errorf("Skip{%q}.Agent() = %q, want %q", file, got, want)
		}
	}
}
