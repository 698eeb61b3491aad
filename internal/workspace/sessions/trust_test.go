package sessions_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/sessions"
)

// TestRecordNeverWritableByOthers: a record is written 0644 whatever the
// umask (umask 0 here; the docs' multi-account setup runs umask 002,
// under which a record used to be 0664: rewritable in place by every
// member of the tree's group).
func TestRecordNeverWritableByOthers(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	root := tree.Root(t.TempDir())
	s := &sessions.Session{ID: "ab12", Agent: "alice-ab12", Status: sessions.Starting, Created: time.Now()}
	if err := sessions.Create(root, s); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		fi, err := os.Stat(sessions.Path(root, s.ID))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o644 {
			t.Errorf("%s: record mode %v, want 0644", when, got)
		}
	}
	check("created")
	s.Status = sessions.Running
	if err := sessions.Update(root, s); err != nil {
		t.Fatal(err)
	}
	check("updated")
}

// TestCheck: a record is acted on only when the file it was read from is
// this account's, a regular file, writable by no one else, with one name;
// the refusal names the file, its owner and mode, and how to fix it.
func TestCheck(t *testing.T) {
	uid := os.Getuid()
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		uid   int // the account acting
		want  error
	}{
		{"own, 0644", func(*testing.T, string) {}, uid, nil},
		{"own, 0600", func(t *testing.T, p string) { chmod(t, p, 0o600) }, uid, nil},
		{"group-writable", func(t *testing.T, p string) { chmod(t, p, 0o664) }, uid, sessions.ErrUnsafe},
		{"world-writable", func(t *testing.T, p string) { chmod(t, p, 0o646) }, uid, sessions.ErrUnsafe},
		{"hard link", func(t *testing.T, p string) {
			if err := os.Link(p, filepath.Join(t.TempDir(), "other")); err != nil {
				t.Fatal(err)
			}
		}, uid, sessions.ErrUnsafe},
		{"another account's", func(*testing.T, string) {}, uid + 1, sessions.ErrForeign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tree.Root(t.TempDir())
			if err := sessions.Create(root, &sessions.Session{ID: "ab12", Agent: "alice-ab12", Status: sessions.Running}); err != nil {
				t.Fatal(err)
			}
			path := sessions.Path(root, "ab12")
			tt.setup(t, path)
			for _, read := range []func() (*sessions.Session, error){
				func() (*sessions.Session, error) { return sessions.Read(root, "ab12") },
				func() (*sessions.Session, error) { return sessions.Find(root, "alice-ab12") },
				func() (*sessions.Session, error) {
					all, err := sessions.List(root)
					if err != nil || len(all) != 1 {
						t.Fatalf("List = %v, %v", all, err)
					}
					return &all[0], nil
				},
			} {
				s, err := read()
				if err != nil {
					t.Fatal(err)
				}
				err = sessions.Check(root, s, tt.uid)
				if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
					t.Fatalf("Check = %v, want %v", err, tt.want)
				}
				var re *sessions.RecordError
				if err != nil && (!errors.As(err, &re) || !strings.Contains(err.Error(), path)) {
					t.Errorf("refusal %q does not name %s", err, path)
				}
				if errors.Is(err, sessions.ErrUnsafe) && !strings.Contains(err.Error(), "chmod go-w "+path) {
					t.Errorf("refusal %q does not say how to fix it", err)
				}
			}
		})
	}
	// A session not read from its file (made here) is not taken on trust.
	root := tree.Root(t.TempDir())
	if err := sessions.Check(root, &sessions.Session{ID: "ab12"}, uid); !errors.Is(err, sessions.ErrUnsafe) {
		t.Errorf("Check of a session never read = %v, want ErrUnsafe", err)
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
