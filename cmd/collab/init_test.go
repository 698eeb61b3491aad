package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

func TestInitGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to a group we are not in needs root")
	}
	root := filepath.Join(t.TempDir(), "collab")
	const gid = 4242 // a group other than ours
	r := runCollab(t, nil, "", "init", "--root", root, "--group", "4242")
	if r.code != 0 {
		t.Fatalf("init: %d %s", r.code, r.stderr)
	}
	for _, dir := range tree.Root(root).Folders() {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Gid) != gid {
			t.Errorf("%s: group %d, want %d", dir, st.Gid, gid)
		}
		if fi.Mode()&fs.ModeSetgid == 0 || fi.Mode().Perm()&0o070 != 0o070 || fi.Mode().Perm()&0o002 != 0 {
			t.Errorf("%s: mode %v, want setgid, group rwx, not world-writable", dir, fi.Mode())
		}
	}
	// The keyring is the admin's alone, even with --group.
	if fi, err := os.Stat(tree.Root(root).Keys()); err != nil || fi.Mode().Perm()&0o022 != 0 {
		t.Errorf("keyring folder after init --group: %v, %v; want it writable by its owner only", fi, err)
	}
	if !strings.Contains(r.stdout, "writable by its own account alone") {
		t.Errorf("no word on who may write what in:\n%s", r.stdout)
	}
	// A channel the watcher or send makes later belongs to the group too.
	r = runCollab(t, nil, "", "send", "--root", root, "--agent", "ann", "--channel", "dev", "hello")
	if r.code != 0 {
		t.Fatalf("send: %s", r.stderr)
	}
	fi, err := os.Stat(tree.Root(root).Channel("dev"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Gid) != gid || fi.Mode().Perm()&0o070 != 0o070 {
		t.Errorf("new channel folder: group %d mode %v, want group %d and group rwx", st.Gid, fi.Mode(), gid)
	}
}

func TestInitRepairsWorldWritable(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "channels"), 0o755)
	os.Chmod(filepath.Join(root, "channels"), 0o777)
	r := runCollab(t, nil, "", "watch", "--root", root, "--agent", "a", "--channel", "dev", "--cmd", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "world-writable") {
		t.Fatalf("watch on a world-writable tree: code %d, stderr %q; want a refusal", r.code, r.stderr)
	}
	if r := runCollab(t, nil, "", "init", "--root", root); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	if err := tree.Root(root).CheckShared(); err != nil {
		t.Errorf("after init: %v", err)
	}
}

func TestInitRefusesSymlinkedFolder(t *testing.T) {
	root := t.TempDir()
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "channels")); err != nil {
		t.Fatal(err)
	}
	r := runCollab(t, nil, "", "init", "--root", root)
	if r.code != 1 || !strings.Contains(r.stderr, "symbolic link") {
		t.Errorf("init with channels/ a symlink: code %d, stderr %q", r.code, r.stderr)
	}
}

func TestInitUsage(t *testing.T) {
	for _, args := range [][]string{
		{"init", "--root", t.TempDir(), "--group", "no-such-group-xyz"},
		{"init", "--root", t.TempDir(), "extra"},
	} {
		if r := runCollab(t, nil, "", args...); r.code != 2 {
			t.Errorf("%v: code %d, want 2 (%s)", args, r.code, r.stderr)
		}
	}
}

func TestInitJSON(t *testing.T) {
	root := filepath.Join(t.TempDir(), "collab")
	r := runCollab(t, map[string]string{"COLLAB_ROOT": root}, "", "init", "--json")
	var got []struct{ Path, Mode, Group string }
	if err := json.Unmarshal([]byte(r.stdout), &got); r.code != 0 || err != nil {
		t.Fatalf("init --json: exit %d, %q (%v), stderr %q", r.code, r.stdout, err, r.stderr)
	}
	want := append(tree.Root(root).Folders(), tree.Root(root).Keys())
	if len(got) != len(want) {
		t.Fatalf("init --json listed %d folders, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Path != want[i] || !strings.HasPrefix(got[i].Mode, "d") || got[i].Group == "" {
			t.Errorf("folder %d = %+v, want %s", i, got[i], want[i])
		}
	}
}

// TestWatchSymlinkedFolderNoHint: a symlinked state folder is refused
// without the hint to pass --allow-world-writable, which does not allow
// it; a world-writable folder still gets the hint.
func TestWatchSymlinkedFolderNoHint(t *testing.T) {
	root := newTree(t)
	if err := os.Symlink(t.TempDir(), filepath.Join(root, "state")); err != nil {
		t.Fatal(err)
	}
	r := runCollab(t, nil, "", "watch", "--root", root, "--agent", "a", "--channel", "dev", "--cmd", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "symbolic link") || strings.Contains(r.stderr, "allow-world-writable") {
		t.Errorf("watch with state/ a symlink: code %d, stderr %q; want a refusal without the --allow-world-writable hint", r.code, r.stderr)
	}
	root = t.TempDir()
	os.MkdirAll(filepath.Join(root, "channels"), 0o755)
	os.Chmod(filepath.Join(root, "channels"), 0o777)
	r = runCollab(t, nil, "", "watch", "--root", root, "--agent", "a", "--channel", "dev", "--cmd", "true")
	if r.code != 1 || !strings.Contains(r.stderr, "or pass --allow-world-writable") {
		t.Errorf("watch on a world-writable tree: code %d, stderr %q; want the hint", r.code, r.stderr)
	}
}
