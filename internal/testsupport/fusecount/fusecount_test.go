package fusecount

import (
	"os"
	"path/filepath"
	"testing"
)

// RequireEnv, when "1", turns a missing FUSE into a test failure instead of
// a skip, as bindfstest's COLLAB_TEST_REQUIRE_BINDFS does.
const requireEnv = "COLLAB_TEST_REQUIRE_FUSE"

func mount(t *testing.T, backing string, o Options) *Mount {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("FUSE required (%s=1): %v", requireEnv, err)
		}
		t.Skipf("FUSE unavailable (set %s=1 to fail instead): %v", requireEnv, err)
	}
	m, err := New(backing, filepath.Join(t.TempDir(), "mnt"), o)
	if err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatal(err)
		}
		t.Skipf("FUSE mount failed: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return m
}

func TestCounts(t *testing.T) {
	backing := t.TempDir()
	if err := os.MkdirAll(filepath.Join(backing, "channels", "general"), 0o755); err != nil {
		t.Fatal(err)
	}
	// No caching at all: every operation reaches the file system.
	m := mount(t, backing, Options{AttrTimeout: -1, EntryTimeout: -1, NegativeTimeout: -1})
	ch := filepath.Join(m.Dir, "channels", "general")
	if _, err := os.ReadDir(ch); err != nil { // warm: the lookups of the path
		t.Fatal(err)
	}
	m.Reset()

	// A message written as collab does: a temp file, fsynced, renamed.
	tmp, final := filepath.Join(ch, ".m.json.tmp"), filepath.Join(ch, "m.json")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(`{"text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Rename(tmp, final); err != nil {
		t.Fatal(err)
	}
	got := m.Counts()
	for _, k := range []Key{{"create", "channel"}, {"write", "channel"}, {"fsync", "channel"}, {"rename", "channel"}, {"release", "channel"}} {
		if got[k] == 0 {
			t.Errorf("%v not counted: %v", k, got)
		}
	}
	if got[Key{"create", "channel"}] != 1 || got[Key{"rename", "channel"}] != 1 {
		t.Errorf("create %d, rename %d; want 1 each: %v", got[Key{"create", "channel"}], got[Key{"rename", "channel"}], got)
	}

	// A listing and a read.
	m.Reset()
	names, err := os.ReadDir(ch)
	if err != nil || len(names) != 1 {
		t.Fatalf("ReadDir = %v, %v", names, err)
	}
	data, err := os.ReadFile(final)
	if err != nil || string(data) != `{"text":"hi"}` {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	got = m.Counts()
	for _, k := range []Key{{"opendir", "channel"}, {"readdir", "channel"}, {"open", "channel"}, {"read", "channel"}, {"lookup", "channel"}} {
		if got[k] == 0 {
			t.Errorf("%v not counted: %v", k, got)
		}
	}
	if got[Key{"opendir", "channel"}] != 1 || got[Key{"open", "channel"}] != 1 {
		t.Errorf("opendir %d, open %d; want 1 each: %v", got[Key{"opendir", "channel"}], got[Key{"open", "channel"}], got)
	}

	// Other classes, an unlink and statfs.
	m.Reset()
	if err := os.MkdirAll(filepath.Join(m.Dir, "signals", "presence"), 0o755); err != nil {
		t.Fatal(err)
	}
	hb := filepath.Join(m.Dir, "signals", "presence", "ana.json")
	if err := os.WriteFile(hb, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(hb); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(m.Dir, "claims")); !os.IsNotExist(err) {
		t.Fatalf("stat claims: %v, want not exist", err)
	}
	got = m.Counts()
	want := map[Key]uint64{{"mkdir", "signals"}: 1, {"mkdir", "presence"}: 1, {"create", "presence"}: 1, {"unlink", "presence"}: 1, {"lookup", "claims"}: 1}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%v = %d, want %d: %v", k, got[k], n, got)
		}
	}
	if got.Total() == 0 || got.ByOp()["mkdir"] != 2 || got.ByClass()["presence"] == 0 {
		t.Errorf("sums wrong: %v", got)
	}
	srv := got.Server()
	if srv[Key{"release", "presence"}] != 0 || srv[Key{"create", "presence"}] != 1 || srv.Total() >= got.Total() {
		t.Errorf("Server() = %v, want FUSE's own requests (release, flush) dropped from %v", srv, got)
	}
}

// TestCachedAttributes checks that the kernel's caches answer what they
// can: with a 1 s attribute and entry cache, a second stat of a file right
// after the first reaches the file system no more.
func TestCachedAttributes(t *testing.T) {
	backing := t.TempDir()
	if err := os.WriteFile(filepath.Join(backing, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := mount(t, backing, Options{AttrTimeout: 60e9, EntryTimeout: 60e9})
	p := filepath.Join(m.Dir, "f")
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	before := m.Counts()
	for range 10 {
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
	}
	if d := m.Counts().Sub(before); d.Total() != 0 {
		t.Errorf("cached stats reached the file system: %v", d)
	}
}

func TestTreeClass(t *testing.T) {
	for rel, want := range map[string]string{
		"": "root", "channels": "channels", "channels/general": "channel", "channels/general/x.json": "channel",
		"claims/general/ana": "claims", "signals/presence/ana.json": "presence", "signals": "signals",
		"state/ana/inbox/general": "state", "logs/ana.log": "logs", "keys": "keys",
	} {
		if got := TreeClass(rel); got != want {
			t.Errorf("TreeClass(%q) = %q, want %q", rel, got, want)
		}
	}
}
