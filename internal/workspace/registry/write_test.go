package registry

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestWriteReadRemove: an entry written is read back whole (List, Read),
// its signature verifies as its agent's only, and Remove removes it.
func TestWriteReadRemove(t *testing.T) {
	root := tree.Root(t.TempDir())
	key, err := signing.NewKey(filepath.Join(t.TempDir(), "w1.key"), "w1", false)
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring.Open(filepath.Join(t.TempDir(), "keys"))
	if err := ring.Trust("w1", key.PublicKey()); err != nil {
		t.Fatal(err)
	}
	v := signing.NewVerifier(ring)
	a := Agent{ID: "w1", Role: "worker", Host: "vm-2", Runtime: "claude_code", Capabilities: []string{"go", "testing"},
		Registered: time.Now().UTC().Format(time.RFC3339Nano), Extra: map[string]json.RawMessage{"cli": json.RawMessage(`"claude"`)}}
	if err := a.Sign(key); err != nil {
		t.Fatal(err)
	}
	if err := Write(root, a); err != nil {
		t.Fatal(err)
	}
	got, err := Read(root, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, a) {
		t.Errorf("read %#v, want %#v", got, a)
	}
	if vd := got.Verify(v); vd != signing.Verified {
		t.Errorf("verdict %s", vd)
	}
	changed := got
	changed.Role = "lead"
	if vd := changed.Verify(v); vd == signing.Verified {
		t.Error("a changed entry verifies")
	}
	moved := got
	moved.ID = "w2"
	if vd := moved.Verify(v); vd == signing.Verified {
		t.Error("an entry copied to another agent verifies")
	}
	list, _, err := List(root)
	if err != nil || len(list) != 1 || list[0].Runtime != "claude_code" {
		t.Errorf("list %+v, %v", list, err)
	}
	if err := Remove(root, "w1"); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(root, "w1"); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("read after remove: %v", err)
	}
	if err := Remove(root, "w1"); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("second remove: %v", err)
	}
	if Known(root, "w1") {
		t.Error("w1 is still known")
	}
}

// TestCheck: what Write refuses.
func TestCheck(t *testing.T) {
	for _, a := range []Agent{
		{ID: "../x"},
		{ID: "w", Role: "a\nb"},
		{ID: "w", Runtime: strings.Repeat("x", MaxField+1)},
		{ID: "w", Capabilities: []string{"a,b"}},
		{ID: "w", Capabilities: []string{""}},
		{ID: "w", Capabilities: make([]string, MaxCapabilities+1)},
	} {
		if err := Write(tree.Root(t.TempDir()), a); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", a, err)
		}
	}
}

// TestLenientNewFields: a hand-written entry whose new fields have the
// wrong type is still read, without them.
func TestLenientNewFields(t *testing.T) {
	got, err := decode([]byte(`{"role":"qc","runtime":1,"capabilities":"go","signature":"x"}`), "codex")
	if err != nil || got.Role != "qc" || got.Runtime != "" || got.Capabilities != nil || got.Signature != nil {
		t.Errorf("decode = %#v, %v", got, err)
	}
}

func FuzzEncodeRoundTrip(f *testing.F) {
	for _, s := range []string{`{"id":"codex","role":"r","capabilities":["a"],"runtime":"x"}`, `{}`, `[]`, `{"capabilities":[1]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := decode(data, "codex")
		if err != nil {
			return
		}
		if a.ID != "codex" {
			t.Fatalf("id %q", a.ID)
		}
		if Check(a) != nil {
			return
		}
		out, err := a.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := decode(out, "codex")
		if err != nil || string(back.Payload()) != string(a.Payload()) {
			t.Fatalf("round trip of %s: %v", out, err)
		}
	})
}
