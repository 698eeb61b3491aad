// Package keytest makes the signing keys and keyrings that tests need:
// a keyring in a temporary folder, and an agent's key trusted in it.
//
// It is for tests only: its functions fail the test they are given.
package keytest

import (
	"path/filepath"
	"testing"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
)

// Ring returns an empty keyring in a temporary folder of t.
func Ring(t testing.TB) *keyring.Ring {
	t.Helper()
	return keyring.Open(filepath.Join(t.TempDir(), "keys"))
}

// New makes a key for agent in a temporary folder of t (mode 0600, as
// 'collab key new' writes it), not trusted anywhere.
func New(t testing.TB, agent string) *signing.Signer {
	t.Helper()
	s, err := signing.NewKey(filepath.Join(t.TempDir(), agent+".key"), agent, false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Trusted makes a key for agent and trusts it in ring.
func Trusted(t testing.TB, ring *keyring.Ring, agent string) *signing.Signer {
	t.Helper()
	s := New(t, agent)
	if err := ring.Trust(agent, s.PublicKey()); err != nil {
		t.Fatal(err)
	}
	return s
}
