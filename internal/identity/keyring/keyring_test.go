package keyring

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func pub(t *testing.T) string {
	t.Helper()
	p, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return FormatPublic(p)
}

func TestTrustRevokeList(t *testing.T) {
	r := Open(filepath.Join(t.TempDir(), "keys"))
	if !r.Empty() || r.HasKeys("a") {
		t.Fatal("a new ring is not empty")
	}
	k1, k2 := pub(t), pub(t)
	for _, k := range []string{k1, "ed25519:" + k2, k1} { // the repeat does nothing
		if err := r.Trust("a", k); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Trust("a", "bm90IGEga2V5"); !errors.Is(err, ErrBadKey) {
		t.Errorf("Trust of a bad key = %v, want ErrBadKey", err)
	}
	if err := r.Trust("../x", k1); err == nil {
		t.Error("Trust for a bad agent name: no error")
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := r.Revoke("a", k1, at); err != nil {
		t.Fatal(err)
	}
	if err := r.Revoke("b", "", at); !errors.Is(err, ErrNotFound) {
		t.Errorf("Revoke of an agent with no keys = %v, want ErrNotFound", err)
	}
	all, err := r.List()
	if err != nil || len(all["a"]) != 2 {
		t.Fatalf("List = %v, %v; want a's two keys", all, err)
	}
	got, err := r.Find("a", k1)
	if err != nil || got.GoodAt(at) || !got.GoodAt(at.Add(-time.Second)) {
		t.Errorf("Find(k1) = %+v, %v; want revoked at %v", got, err, at)
	}
	if k, err := r.Find("a", k2); err != nil || !k.GoodAt(time.Now()) {
		t.Errorf("Find(k2) = %+v, %v", k, err)
	}
	if _, err := r.Find("a", pub(t)); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find of another key = %v", err)
	}
	fi, err := os.Stat(r.Dir())
	if err != nil || fi.Mode().Perm()&0o022 != 0 {
		t.Errorf("keyring folder mode %v, %v; want writable by its owner only", fi.Mode(), err)
	}
}

func TestCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	r := Open(dir)
	if err := r.Check(os.Geteuid(), false); err != nil {
		t.Errorf("missing keyring: %v", err)
	}
	if err := r.Trust("a", pub(t)); err != nil {
		t.Fatal(err)
	}
	me := os.Geteuid()
	if err := r.Check(me, false); !errors.Is(err, ErrUnsafe) {
		t.Errorf("keyring owned by this account = %v, want ErrUnsafe", err)
	}
	if err := r.Check(me, true); err != nil {
		t.Errorf("keyring owned by this account, allowed: %v", err)
	}
	os.Chmod(filepath.Join(dir, "a.json"), 0o664)
	if err := r.Check(me, true); !errors.Is(err, ErrUnsafe) {
		t.Errorf("group-writable key file = %v, want ErrUnsafe", err)
	}
	os.Chmod(filepath.Join(dir, "a.json"), 0o644)
	os.Symlink("a.json", filepath.Join(dir, "b.json"))
	if err := r.Check(me, true); !errors.Is(err, ErrUnsafe) {
		t.Errorf("symlinked key file = %v, want ErrUnsafe", err)
	}
	os.Remove(filepath.Join(dir, "b.json"))
	if me != 0 {
		// Owned by neither root nor the admin named.
		if err := r.Check(me+1, true); !errors.Is(err, ErrUnsafe) {
			t.Errorf("keyring owned by another account than the admin = %v, want ErrUnsafe", err)
		}
		return
	}
	// As root: a keyring planted by an agent account (uid 65534 here).
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Skip(err)
	}
	if err := r.Check(0, true); !errors.Is(err, ErrUnsafe) {
		t.Errorf("keyring folder owned by another account = %v, want ErrUnsafe", err)
	}
	os.Chown(filepath.Join(dir, "a.json"), 65534, 65534)
	if err := r.Check(65534, false); err != nil {
		t.Errorf("keyring owned by the admin, checked by root: %v", err)
	}
}

// TestCheckedRingHoldsItsFolder: once checked, a ring reads the folder it
// checked, not whatever is later put at its path, and checks each file
// again as it reads it.
func TestCheckedRingHoldsItsFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	r := Open(dir)
	good, planted := pub(t), pub(t)
	if err := r.Trust("a", good); err != nil {
		t.Fatal(err)
	}
	if err := r.Check(os.Geteuid(), true); err != nil {
		t.Fatal(err)
	}
	// The folder moved aside and another, which passes the check on its
	// own, put in its place.
	if err := os.Rename(dir, dir+".real"); err != nil {
		t.Fatal(err)
	}
	other := Open(dir)
	if err := other.Trust("a", planted); err != nil {
		t.Fatal(err)
	}
	r.SetClock(func() time.Time { return time.Now().Add(time.Hour) }) // past the cache
	if _, err := r.Find("a", planted); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find(planted key) = %v: the ring read the folder put in its place", err)
	}
	if _, err := r.Find("a", good); err != nil {
		t.Errorf("Find(checked key) = %v", err)
	}
	all, err := r.List()
	if err != nil || len(all["a"]) != 1 || all["a"][0].Public != good {
		t.Errorf("List = %v, %v; want the checked folder's one key", all, err)
	}

	// A file made writable by others since is refused at the next read:
	// the ring fails closed.
	if err := os.Chmod(filepath.Join(dir+".real", "a.json"), 0o664); err != nil {
		t.Fatal(err)
	}
	r.SetClock(func() time.Time { return time.Now().Add(2 * time.Hour) })
	if _, err := r.Keys("a"); !errors.Is(err, ErrUnsafe) {
		t.Errorf("Keys after chmod g+w = %v, want ErrUnsafe", err)
	}
	if !r.HasKeys("a") {
		t.Error("HasKeys of an agent whose file fails the check = false; an unsigned message in its name would pass as keyless")
	}
}

// TestCheckParent: the folder that holds the keyring must not let its
// group or others rename the keyring away unless it is sticky.
func TestCheckParent(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "keys")
	r := Open(dir)
	if err := r.Trust("a", pub(t)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{
		{0o755, true},
		{0o775, false},
		{0o775 | os.ModeSticky, true},
		{0o777 | os.ModeSticky, true},
	} {
		if err := os.Chmod(parent, c.mode); err != nil {
			t.Fatal(err)
		}
		err := Open(dir).Check(os.Geteuid(), true)
		if ok := err == nil; ok != c.ok || (!ok && !errors.Is(err, ErrUnsafe)) {
			t.Errorf("parent mode %v: Check = %v, want ok %v", c.mode, err, c.ok)
		}
	}
	// A keyring folder that appears after the check must pass it too.
	missing := Open(filepath.Join(t.TempDir(), "keys"))
	if err := missing.Check(os.Geteuid(), true); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(missing.Dir(), 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(missing.Dir(), 0o777)
	if _, err := missing.Keys("a"); !errors.Is(err, ErrUnsafe) {
		t.Errorf("Keys from a world-writable folder made after the check = %v, want ErrUnsafe", err)
	}
}
