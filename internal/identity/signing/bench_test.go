package signing

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/identity/keyring"
)

// memKeys is a keyring in memory, so the benchmark measures signing and
// checking alone.
type memKeys map[string]keyring.Key

func (m memKeys) Find(agent, pub string) (keyring.Key, error) {
	if k, ok := m[agent]; ok && k.Public == pub {
		return k, nil
	}
	return keyring.Key{}, keyring.ErrNotFound
}

func (m memKeys) HasKeys(agent string) bool { _, ok := m[agent]; return ok }

// BenchmarkSignVerify: the cost per message of signing, of a first check
// (the Ed25519 verification) and of a remembered check (a digest of the
// payload and a map lookup), for a typical 1 KiB message and a 1 MB one.
// Each includes building the payload from the message's fields.
func BenchmarkSignVerify(b *testing.B) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	s := NewSigner("alice", priv)
	keys := memKeys{"alice": {Public: s.PublicKey()}}
	at := time.Now()
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"1MB", 1 << 20}} {
		text := strings.Repeat("x", size.n)
		payload := func() []byte {
			return Payload("message", "msg-20260101-000000-alice-0001", "dev", "alice", "bob",
				"2026-01-01T00:00:00.000Z", "chat", "", "", "0", text, "", "[]")
		}
		sig := s.Sign(payload())
		b.Run(size.name+"/sign", func(b *testing.B) {
			b.SetBytes(int64(size.n))
			for b.Loop() {
				s.Sign(payload())
			}
		})
		b.Run(size.name+"/verify-first", func(b *testing.B) {
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if NewVerifier(keys).Verify("alice", at, payload(), sig) != Verified {
					b.Fatal("not verified")
				}
			}
		})
		b.Run(size.name+"/verify-remembered", func(b *testing.B) {
			b.SetBytes(int64(size.n))
			v := NewVerifier(keys)
			v.Verify("alice", at, payload(), sig)
			for b.Loop() {
				if v.Verify("alice", at, payload(), sig) != Verified {
					b.Fatal("not verified")
				}
			}
		})
	}
}
