package signing

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/identity/keyring"
)

func TestPayloadBytes(t *testing.T) {
	got := string(Payload("message", "a", "", "two\nlines", "é"))
	want := "collab-signature-v1\nmessage\n1:a\n0:\n9:two\nlines\n2:é\n"
	if got != want {
		t.Errorf("Payload = %q, want %q", got, want)
	}
	// Field boundaries are part of what is signed.
	if string(Payload("k", "ab", "c")) == string(Payload("k", "a", "bc")) {
		t.Error("moving a byte between fields gives the same payload")
	}
}

// ring is a keyring in a temp folder holding one key of agent.
func ring(t *testing.T, agent string) (*keyring.Ring, *Signer) {
	t.Helper()
	dir := t.TempDir()
	s, err := NewKey(filepath.Join(dir, "cfg", agent+".key"), agent, false)
	if err != nil {
		t.Fatal(err)
	}
	r := keyring.Open(filepath.Join(dir, "keys"))
	if err := r.Trust(agent, s.PublicKey()); err != nil {
		t.Fatal(err)
	}
	return r, s
}

// rotated is alice's keyring after a rotation: old, revoked at
// revokedAt, and newer, good.
func rotated(t *testing.T) (r *keyring.Ring, old, newer *Signer, revokedAt time.Time) {
	t.Helper()
	r, old = ring(t, "alice")
	newer, err := NewKey(filepath.Join(t.TempDir(), "alice.key"), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Trust("alice", newer.PublicKey()); err != nil {
		t.Fatal(err)
	}
	revokedAt = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	if err := r.Revoke("alice", old.PublicKey(), revokedAt); err != nil {
		t.Fatal(err)
	}
	return r, old, newer, revokedAt
}

func TestVerdicts(t *testing.T) {
	r, alice := ring(t, "alice")
	_, priv, _ := ed25519.GenerateKey(nil)
	stranger := NewSigner("alice", priv)
	v := NewVerifier(r)
	now := time.Now()
	p := Payload("message", "hello")
	good := alice.Sign(p)
	tampered := *good
	tampered.Sig = stranger.Sign(p).Sig
	cases := []struct {
		name    string
		agent   string
		payload []byte
		sig     *Signature
		want    Verdict
	}{
		{"verified", "alice", p, good, Verified},
		{"unsigned", "alice", p, nil, Unsigned},
		{"other payload", "alice", Payload("message", "hellO"), good, BadSignature},
		{"another key's signature under alice's key", "alice", p, &tampered, BadSignature},
		{"key not alice's", "alice", p, stranger.Sign(p), UnknownKey},
		{"alice's key for bob", "bob", p, good, UnknownKey},
		{"other algorithm", "alice", p, &Signature{Alg: "rsa", Key: good.Key, Sig: good.Sig}, UnknownKey},
		{"garbage signature", "alice", p, &Signature{Alg: Alg, Key: good.Key, Sig: "!!"}, BadSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Twice: the second answer comes from the remembered check.
			for range 2 {
				if got := v.Verify(c.agent, now, c.payload, c.sig); got != c.want {
					t.Errorf("Verify = %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestRevokedAndRotated(t *testing.T) {
	r, old, newer, revokedAt := rotated(t)
	r2 := keyring.Open(r.Dir()) // no cached lookups
	v := NewVerifier(r2)
	p := Payload("message", "x")
	for _, c := range []struct {
		name string
		s    *Signer
		at   time.Time
		want Verdict
	}{
		{"old key before its revocation", old, revokedAt.Add(-time.Second), Verified},
		{"old key at its revocation", old, revokedAt, RevokedKey},
		{"old key after", old, revokedAt.Add(time.Hour), RevokedKey},
		{"new key after", newer, revokedAt.Add(time.Hour), Verified},
	} {
		if got := v.Verify("alice", c.at, p, c.s.Sign(p)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if err := r2.Trust("alice", old.PublicKey()); err == nil {
		t.Error("trusting a revoked key again: no error")
	}
}

func TestPolicies(t *testing.T) {
	r, _ := ring(t, "alice")
	v := NewVerifier(r)
	for _, c := range []struct {
		p     Policy
		agent string
		v     Verdict
		want  bool
	}{
		{Any, "alice", BadSignature, true},
		{Known, "alice", Verified, true},
		{Known, "alice", Unsigned, false},
		{Known, "alice", BadSignature, false},
		{Known, "alice", RevokedKey, false},
		{Known, "bob", Unsigned, true}, // no key: taken at his word
		{Known, "bob", UnknownKey, true},
		{Signed, "bob", Unsigned, false},
		{Signed, "alice", Verified, true},
	} {
		if got := v.Accepts(c.p, c.agent, c.v); got != c.want {
			t.Errorf("Accepts(%s, %s, %v) = %v, want %v", c.p, c.agent, c.v, got, c.want)
		}
	}
	if _, err := ParsePolicy("sometimes"); err == nil {
		t.Error("ParsePolicy(sometimes): no error")
	}
}

func TestKeyFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k", "a.key")
	s, err := NewKey(path, "a", false)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v; want 0600", fi.Mode(), err)
	}
	back, err := LoadKey(path, "a")
	if err != nil || back.PublicKey() != s.PublicKey() {
		t.Fatalf("LoadKey = %v, %v", back, err)
	}
	if _, err := NewKey(path, "a", false); err == nil {
		t.Error("NewKey over an existing key without replace: no error")
	}
	if _, err := NewKey(path, "a", true); err != nil {
		t.Errorf("NewKey with replace: %v", err)
	}
	os.Chmod(path, 0o640)
	if _, err := LoadKey(path, "a"); !errors.Is(err, ErrExposed) {
		t.Errorf("LoadKey of a group-readable key = %v, want ErrExposed", err)
	}
	if _, err := LoadKey(path+".none", "a"); !errors.Is(err, ErrNoKey) {
		t.Errorf("LoadKey of a missing key = %v, want ErrNoKey", err)
	}
	if got := DefaultKeyPath("a", func(k string) string { return map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}[k] }); got != "/x/collab/keys/a.key" {
		t.Errorf("DefaultKeyPath = %s", got)
	}
	if got := DefaultKeyPath("a", func(k string) string { return map[string]string{"HOME": "/h"}[k] }); got != "/h/.config/collab/keys/a.key" {
		t.Errorf("DefaultKeyPath without XDG = %s", got)
	}
}

// FuzzVerify: no input makes the verifier panic, and nothing but the
// signed payload with its signature verifies.
func FuzzVerify(f *testing.F) {
	dir := f.TempDir()
	s, err := NewKey(filepath.Join(dir, "a.key"), "a", false)
	if err != nil {
		f.Fatal(err)
	}
	r := keyring.Open(filepath.Join(dir, "keys"))
	if err := r.Trust("a", s.PublicKey()); err != nil {
		f.Fatal(err)
	}
	v := NewVerifier(r)
	signed := Payload("message", "id", "hello")
	good := s.Sign(signed)
	f.Add([]byte("x"), good.Key, good.Sig, "ed25519")
	f.Add(signed, good.Key, good.Sig, "ed25519")
	f.Add(signed, "AAAA", "", "")
	f.Fuzz(func(t *testing.T, payload []byte, key, sig, alg string) {
		got := v.Verify("a", time.Now(), payload, &Signature{Alg: alg, Key: key, Sig: sig})
		same := string(payload) == string(signed) && key == good.Key && sig == good.Sig && alg == Alg
		if (got == Verified) != same {
			t.Fatalf("Verify(%q, %q, %q) = %v", payload, key, sig, got)
		}
	})
}

// TestMark: the tag every reader shows, and what counts as forged.
func TestMark(t *testing.T) {
	r, _ := ring(t, "alice")
	v := NewVerifier(r)
	for _, c := range []struct {
		agent  string
		v      Verdict
		tag    string
		forged bool
	}{
		{"alice", Verified, "", false},
		{"alice", Unsigned, "[UNSIGNED]", true}, // alice has keys
		{"bob", Unsigned, "(unsigned)", false},  // bob has none
		{"bob", UnknownKey, "(unknown key)", false},
		{"bob", BadSignature, "[BAD SIGNATURE]", true},
		{"bob", RevokedKey, "[REVOKED KEY]", true},
	} {
		tag, forged := v.Mark(c.agent, c.v)
		if tag != c.tag || forged != c.forged || v.Forged(c.agent, c.v) != c.forged {
			t.Errorf("Mark(%s, %v) = %q, %v; want %q, %v", c.agent, c.v, tag, forged, c.tag, c.forged)
		}
		if back, ok := ParseVerdict(c.v.String()); !ok || back != c.v {
			t.Errorf("ParseVerdict(%q) = %v, %v", c.v.String(), back, ok)
		}
	}
	if _, ok := ParseVerdict("fine"); ok {
		t.Error("ParseVerdict(fine): ok")
	}
}

func TestSignedAt(t *testing.T) {
	named := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name           string
		named, claimed time.Time
		at             time.Time
		ok             bool
	}{
		{"same time", named, named.Add(250 * time.Millisecond), named.Add(250 * time.Millisecond), true},
		{"claimed before, within the allowance", named, named.Add(-MaxSkew), named, true},
		{"claimed before, beyond the allowance", named, named.Add(-MaxSkew - time.Second), named, false},
		{"claimed long after (posted later)", named, named.Add(48 * time.Hour), named.Add(48 * time.Hour), true},
		{"no time in the name", time.Time{}, named, named, true},
		{"no claimed time", named, time.Time{}, named, true},
		{"neither", time.Time{}, time.Time{}, time.Time{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			at, ok := SignedAt(c.named, c.claimed)
			if !at.Equal(c.at) || ok != c.ok {
				t.Errorf("SignedAt = %v, %v; want %v, %v", at, ok, c.at, c.ok)
			}
		})
	}
}

// TestVerifyNamed: a key revoked at T verifies nothing named after T,
// whatever time the signer claims; a claimed time far before the name's
// does not verify even with a good key.
func TestVerifyNamed(t *testing.T) {
	r, old, newer, revokedAt := rotated(t)
	v := NewVerifier(keyring.Open(r.Dir()))
	p := Payload("message", "x")
	before, after := revokedAt.Add(-time.Minute), revokedAt.Add(time.Minute)
	for _, c := range []struct {
		name           string
		s              *Signer
		named, claimed time.Time
		want           Verdict
	}{
		{"revoked key, both before", old, before, before, Verified},
		{"revoked key, named after, claimed before", old, after, before, RevokedKey},
		{"revoked key, named before, claimed after", old, before, after, RevokedKey},
		{"revoked key, no name time, claimed before", old, time.Time{}, before, Verified},
		{"revoked key, no name time, claimed after", old, time.Time{}, after, RevokedKey},
		{"good key, claimed within the allowance before", newer, after, after.Add(-MaxSkew), Verified},
		{"good key, claimed beyond the allowance before", newer, after, after.Add(-MaxSkew - time.Second), BadSignature},
		{"good key, claimed a day after", newer, after, after.Add(24 * time.Hour), Verified},
		{"revoked key, claimed beyond the allowance before", old, after, before.Add(-MaxSkew), BadSignature},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := v.VerifyNamed("alice", c.named, c.claimed, p, c.s.Sign(p)); got != c.want {
				t.Errorf("VerifyNamed = %v, want %v", got, c.want)
			}
		})
	}
	// What cannot be checked stays what it was: no signature, or not a
	// key of alice's.
	if got := v.VerifyNamed("alice", after, before.Add(-MaxSkew), p, nil); got != Unsigned {
		t.Errorf("unsigned, claimed far before: %v, want unsigned", got)
	}
	_, priv, _ := ed25519.GenerateKey(nil)
	if got := v.VerifyNamed("alice", after, before.Add(-MaxSkew), p, NewSigner("alice", priv).Sign(p)); got != UnknownKey {
		t.Errorf("a stranger's key, claimed far before: %v, want unknown-key", got)
	}
}
