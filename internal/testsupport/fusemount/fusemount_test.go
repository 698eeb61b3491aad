package fusemount

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/tmp/a\040b`: "/tmp/a b", `/plain`: "/plain", `/t\011ab`: "/t\tab"} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBindfs(t *testing.T) {
	if err := Works(t.TempDir()); err != nil {
		if os.Getenv("COLLAB_TEST_REQUIRE_BINDFS") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	backing := t.TempDir()
	at := filepath.Join(t.TempDir(), "with space")
	if err := Bindfs(context.Background(), backing, at, "-o", "attr_timeout=0"); err != nil {
		t.Fatal(err)
	}
	defer Unmount(at)
	if !Mounted(at) {
		t.Fatal("not in the mount table")
	}
	os.WriteFile(filepath.Join(backing, "f"), []byte("x"), 0o644)
	if data, err := os.ReadFile(filepath.Join(at, "f")); err != nil || string(data) != "x" {
		t.Errorf("through the mount: %q %v", data, err)
	}
	if err := Unmount(at); err != nil || Mounted(at) {
		t.Errorf("Unmount: %v (mounted %v)", err, Mounted(at))
	}
	if err := Unmount(at); err != nil {
		t.Errorf("Unmount of an unmounted path: %v", err)
	}
}
