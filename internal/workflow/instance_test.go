package workflow

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// TestRecords: a record written is read back, by name and in the list; a
// file that is not a record is skipped; the stop file is seen once.
func TestRecords(t *testing.T) {
	root := tree.Root(t.TempDir())
	if recs, err := Records(root); err != nil || recs != nil {
		t.Fatalf("Records of no folder: %v, %v", recs, err)
	}
	r := Record{Name: "review", Instance: "pr-1", File: "/w/review.yaml", Host: "h", PID: 42,
		Started: time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC), Status: Running,
		Agents: []string{"reviewer--pr-1", "coder--pr-1"}, Channel: "review--pr-1"}
	if err := WriteRecord(root, &r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root.Workflows(), "junk.json"), []byte("{"), 0o666); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRecord(root, "review", "pr-1")
	if err != nil || got.Status != Running || !slices.Equal(got.Agents, r.Agents) || !got.Started.Equal(r.Started) {
		t.Fatalf("ReadRecord: %+v, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(root.Workflows(), RecordName("review", "pr-1"))); err != nil {
		t.Errorf("record file: %v", err)
	}
	recs, err := Records(root)
	if err != nil || len(recs) != 1 || recs[0].Instance != "pr-1" {
		t.Fatalf("Records: %+v, %v", recs, err)
	}
	if stopAsked(root, "review", "pr-1") {
		t.Error("stop requested before RequestStop")
	}
	if err := RequestStop(root, "review", "pr-1", []byte(`{"by":"me"}`)); err != nil {
		t.Fatal(err)
	}
	if !stopAsked(root, "review", "pr-1") || stopAsked(root, "review", "pr-1") {
		t.Error("StopRequested: want true once, then false")
	}
}

// TestAliases: in an instance's channel its agents are named by their
// NAME; in another channel nobody is; when two instances share a channel
// the one started last holds the name.
func TestAliases(t *testing.T) {
	root := tree.Root(t.TempDir())
	t0 := time.Date(2026, 11, 24, 23, 0, 0, 0, time.UTC)
	for _, r := range []Record{
		{Name: "review", Instance: "a", Started: t0, Status: Done, Agents: []string{"reviewer--a", "coder--a"}, Channel: "review--a"},
		{Name: "review", Instance: "b", Started: t0, Status: Running, Agents: []string{"reviewer--b"}, Channel: "shared"},
		{Name: "review", Instance: "c", Started: t0.Add(time.Minute), Status: Running, Agents: []string{"reviewer--c", "plain"}, Channel: "shared"},
	} {
		if err := WriteRecord(root, &r); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, ch string
		want     map[string]string
	}{
		{"own channel", "review--a", map[string]string{"reviewer": "reviewer--a", "coder": "coder--a"}},
		{"other channel", "dev", nil},
		{"shared, newest wins", "shared", map[string]string{"reviewer": "reviewer--c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Aliases(root, c.ch); !maps.Equal(got, c.want) {
				t.Errorf("Aliases(%q) = %v, want %v", c.ch, got, c.want)
			}
		})
	}
	if got := AgentAliases(root, "reviewer--a"); len(got) != 1 || !slices.Equal(got["review--a"], []string{"reviewer"}) {
		t.Errorf("AgentAliases(reviewer--a) = %v", got)
	}
	if got := AgentAliases(root, "reviewer--b"); got != nil {
		t.Errorf("AgentAliases(reviewer--b) = %v, want none (c holds the name in shared)", got)
	}
	if got := AgentAliases(root, "plain"); got != nil {
		t.Errorf("AgentAliases(plain) = %v", got)
	}
}

func TestDisplay(t *testing.T) {
	for id, want := range map[string]string{
		"reviewer--pr-123": "reviewer@pr-123",
		"codex":            "codex",
		"all":              "all",
		"a--b--c":          "a--b--c", // not an instance agent id: "b--c" is no instance
	} {
		if got := Display(id); got != want {
			t.Errorf("Display(%q) = %q, want %q", id, got, want)
		}
	}
}

// TestRecordFilesNeverWritableByOthers: records and stop files are
// written 0644 whatever the umask (0 here; under the docs' umask 002
// they used to be 0664, rewritable in place by the tree's group, args and
// all: what collab resume runs). A record is acted on only when
// CheckRecord passes the file it was read from; one made writable by
// others, or named for another instance, is refused.
func TestRecordFilesNeverWritableByOthers(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	root := tree.Root(t.TempDir())
	r := Record{Name: "review", Instance: "pr-1", Status: Running, Args: []string{"review.yaml"}}
	if err := CreateRecord(root, &r); err != nil {
		t.Fatal(err)
	}
	if err := RequestStop(root, "review", "pr-1", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root.Workflows(), RecordName("review", "pr-1"))
	for _, p := range []string{file, filepath.Join(root.Workflows(), StopNameBy("review", "pr-1", os.Geteuid()))} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: %v, %v; want mode 0644", p, fi.Mode(), err)
		}
	}
	uid := os.Getuid()
	tests := []struct {
		name string
		mode os.FileMode
		uid  int
		want error
	}{
		{"own", 0o644, uid, nil},
		{"group-writable", 0o664, uid, sessions.ErrUnsafe},
		{"world-writable", 0o646, uid, sessions.ErrUnsafe},
		{"another account's", 0o644, uid + 1, sessions.ErrForeign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.Chmod(file, tt.mode); err != nil {
				t.Fatal(err)
			}
			got, err := ReadRecord(root, "review", "pr-1")
			if err != nil {
				t.Fatal(err)
			}
			err = CheckRecord(root, &got, tt.uid)
			if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Fatalf("CheckRecord = %v, want %v", err, tt.want)
			}
			if err != nil && !strings.Contains(err.Error(), file) {
				t.Errorf("refusal %q does not name %s", err, file)
			}
			recs, _ := Records(root)
			if len(recs) != 1 || (CheckRecord(root, &recs[0], tt.uid) == nil) != (tt.want == nil) {
				t.Errorf("Records: %+v: not judged as ReadRecord", recs)
			}
		})
	}
	// A record of pr-1 under pr-2's name is not pr-2's.
	data, _ := os.ReadFile(file)
	if err := os.WriteFile(filepath.Join(root.Workflows(), RecordName("review", "pr-2")), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadRecord(root, "review", "pr-2"); err == nil {
		t.Errorf("ReadRecord of a record under another name = %+v", got)
	}
}

// stopAsked is StopRequested for the test's own account.
func stopAsked(root tree.Root, name, instance string) bool {
	stop, _ := StopRequested(root, name, instance, os.Geteuid())
	return stop
}
