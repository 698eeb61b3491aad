package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestInit(t *testing.T) {
	ctx := context.Background()
	root := tree.Root(t.TempDir())
	m := NewMount(Config{Root: root})
	if err := os.Chmod(string(root), 0o777); err != nil {
		t.Fatal(err)
	}
	res, err := m.Init(ctx, InitRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Folders) != len(root.Folders())+1 {
		t.Errorf("%d folders, want the tree's %d and the keyring", len(res.Folders), len(root.Folders()))
	}
	for _, f := range res.Folders {
		if fi, err := os.Stat(f.Path); err != nil || fi.Mode().Perm()&0o002 != 0 {
			t.Errorf("%s: %v, mode %v: want a folder no one else may write", f.Path, err, fi.Mode())
		}
	}
	if err := root.Check(); err != nil {
		t.Errorf("after Init the folder is not a tree: %v", err)
	}

	if _, err := m.Init(ctx, InitRequest{Group: "no-such-group-here"}); errkind.Of(err) != errkind.Invalid {
		t.Errorf("unknown group: %v (kind %v), want Invalid", err, errkind.Of(err))
	}

	linked := tree.Root(t.TempDir())
	if err := os.Symlink(t.TempDir(), filepath.Join(string(linked), "channels")); err != nil {
		t.Fatal(err)
	}
	_, err = NewMount(Config{Root: linked}).Init(ctx, InitRequest{})
	if err == nil || errkind.Of(err) == errkind.Invalid {
		t.Errorf("channels/ a link: %v (kind %v), want a refusal that is not the caller's input", err, errkind.Of(err))
	}
}

// TestInitWritesTheProtocolVersion: init publishes ROOT/collab.json with
// this collab's protocol, never replaces it, and refuses a tree written
// in a newer protocol.
func TestInitWritesTheProtocolVersion(t *testing.T) {
	root := tree.Root(t.TempDir())
	m := NewMount(Config{Root: root})
	if _, err := m.Init(context.Background(), InitRequest{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(string(root), tree.VersionName)
	first, err := os.ReadFile(p)
	if err != nil || !strings.Contains(string(first), `"protocol":1`) {
		t.Fatalf("collab.json = %s, %v", first, err)
	}
	if _, err := m.Init(context.Background(), InitRequest{}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(p); string(again) != string(first) {
		t.Errorf("init again replaced collab.json: %s", again)
	}
	os.Remove(p)
	os.WriteFile(p, []byte(`{"protocol": 2}`), 0o644)
	if _, err := m.Init(context.Background(), InitRequest{}); err == nil || !strings.Contains(err.Error(), "upgrade collab") {
		t.Errorf("init of a protocol 2 tree = %v, want a refusal", err)
	}
}

// TestInitChannelSettings: init --channel C --expire-after D writes C's
// expiry, off removes it, and a bad name or duration is Invalid and
// writes nothing.
func TestInitChannelSettings(t *testing.T) {
	root := tree.Root(t.TempDir())
	m := NewMount(Config{Root: root})
	ctx := context.Background()
	for _, c := range []struct {
		ch, expire string
		want       time.Duration
		invalid    bool
	}{
		{"dev", "90s", 90 * time.Second, false},
		{"dev", "25h", 90 * time.Second, true},
		{"dev", "", 90 * time.Second, true},
		{"dev=", "1m", 90 * time.Second, true},
		{"../dev", "1m", 90 * time.Second, true},
		{"dev", "off", 0, false},
	} {
		_, err := m.Init(ctx, InitRequest{ExpireAfter: []string{c.ch + "=" + c.expire}})
		if got := errkind.Of(err) == errkind.Invalid; got != c.invalid {
			t.Errorf("%s %q: error %v, want invalid %v", c.ch, c.expire, err, c.invalid)
		}
		if got := delivery.ChannelExpireAfter(root, "dev"); got != c.want {
			t.Errorf("%s %q: the channel's expiry is %v, want %v", c.ch, c.expire, got, c.want)
		}
	}
}
