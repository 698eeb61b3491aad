package tree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProtocol(t *testing.T) {
	newTree := func(t *testing.T) Root {
		r := Root(t.TempDir())
		if err := os.Mkdir(r.Channels(), 0o755); err != nil {
			t.Fatal(err)
		}
		return r
	}
	write := func(t *testing.T, r Root, data string) string {
		p := filepath.Join(string(r), VersionName)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("absent is 1", func(t *testing.T) {
		r := newTree(t)
		if p, err := r.Protocol(); p != 1 || err != nil || r.Check() != nil {
			t.Errorf("Protocol = %d, %v; Check = %v", p, err, r.Check())
		}
	})
	t.Run("this code's", func(t *testing.T) {
		r := newTree(t)
		write(t, r, string(NewVersion(time.Now())))
		if p, err := r.Protocol(); p != Protocol || err != nil || r.Check() != nil {
			t.Errorf("Protocol = %d, %v; Check = %v", p, err, r.Check())
		}
	})
	t.Run("newer is refused", func(t *testing.T) {
		r := newTree(t)
		write(t, r, `{"protocol": 2}`)
		if err := r.Check(); err == nil || !strings.Contains(err.Error(), "upgrade collab") {
			t.Errorf("Check = %v, want a refusal that says to upgrade", err)
		}
	})
	t.Run("malformed is an error", func(t *testing.T) {
		r := newTree(t)
		write(t, r, `{"protocol": "two"}`)
		if _, err := r.Protocol(); err == nil {
			t.Error("a malformed version file was taken")
		}
	})
	t.Run("a link is not the version", func(t *testing.T) {
		r := newTree(t)
		other := filepath.Join(t.TempDir(), "v.json")
		os.WriteFile(other, []byte(`{"protocol": 9}`), 0o644)
		if err := os.Symlink(other, filepath.Join(string(r), VersionName)); err != nil {
			t.Fatal(err)
		}
		if p, err := r.Protocol(); p != 1 || err != nil {
			t.Errorf("Protocol through a link = %d, %v; want 1", p, err)
		}
	})
	t.Run("another account's is not the tree's", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give the file to another account")
		}
		r := newTree(t)
		p := write(t, r, `{"protocol": 9}`)
		if err := os.Chown(p, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if err := r.Check(); err != nil {
			t.Errorf("a member's planted version file made the tree refused: %v", err)
		}
	})
}

func FuzzProtocol(f *testing.F) {
	f.Add(`{"protocol": 1}`)
	f.Add(`{"protocol": -3}`)
	f.Fuzz(func(t *testing.T, data string) {
		r := Root(t.TempDir())
		os.WriteFile(filepath.Join(string(r), VersionName), []byte(data), 0o644)
		if p, err := r.Protocol(); err == nil && p < 1 {
			t.Fatalf("Protocol = %d without an error", p)
		}
	})
}
