// Package signing signs what collab writes on behalf of a sender, and
// checks such signatures against a keyring (package keyring).
//
// # The signature
//
// A signed file (a message, a presence heartbeat, a kill request, a claim,
// a task event) carries one more top-level JSON member, which readers that
// do not know it ignore:
//
//	"signature": {"alg": "ed25519", "key": "BASE64-PUBLIC-KEY", "sig": "BASE64-SIGNATURE"}
//
// key is the standard base64 of the signer's 32-byte Ed25519 public key;
// sig the standard base64 of the 64-byte Ed25519 signature (RFC 8032, pure
// Ed25519) of the file's payload.
//
// # The payload
//
// The signed bytes are not the file's JSON (whose spacing and key order a
// writer is free to choose) but a list of the fields that give the file its
// meaning, each as UTF-8 text, in an order fixed per kind of file:
//
//	"collab-signature-v1" LF KIND LF
//	then for each field: LENGTH ":" VALUE LF
//
// LENGTH is the value's length in bytes, in decimal ASCII with no leading
// zeros; VALUE the bytes themselves (any bytes, newlines included: the
// length says where a value ends). The kinds and their fields are defined
// by the packages that own those files (channel: "message"; presence:
// "presence"; jobs: "kill"; claim: "claim"; task: "task-event"); each
// names the file's place (its channel, its file name or id) among the
// fields, so a signed file copied under another name or into another
// folder does not verify.
//
// # Verdicts
//
// [Verifier.Verify] gives one of: verified (the key is the sender's in the
// keyring, good at the time signed, and the signature checks), unsigned,
// bad signature (the sender's key, but the bytes do not match), unknown
// key (not a key of that sender), revoked key (revoked at or before the
// time signed). Checks of one payload and signature are remembered, so a
// reader that sees a file again does no cryptography.
//
// # The time signed
//
// The time a file claims (a message's timestamp) is the signer's word: a
// holder of a revoked key could date what it signs before the revocation.
// A file whose name carries a time too (a message id,
// msg-YYYYMMDD-HHMMSS-…, which readers order and look for it by) is judged
// by [Verifier.VerifyNamed]: at the later of the two times ([SignedAt]),
// and as a bad signature when the claimed time lies more than [MaxSkew]
// before the named one (a signed claim that does not hold). A claimed
// time after the named one is allowed: a reply reserved under an id and
// posted later is dated when it is posted, and judging it then only makes
// a revocation count sooner. A file with no time in its name is judged at
// the time it claims.
//
// # Private keys
//
// A private key is a PEM file ("PRIVATE KEY", PKCS #8, as openssl
// writes), mode 0600, by default $XDG_CONFIG_HOME/collab/keys/AGENT.key
// (~/.config when XDG_CONFIG_HOME is unset). A key file that its group or
// other users can read is refused.
package signing

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Alg is the only signature algorithm.
const Alg = "ed25519"

// Field is the JSON member that holds a signature.
const Field = "signature"

const magic = "collab-signature-v1"

var (
	// ErrNoKey is wrapped when an agent has no private key file.
	ErrNoKey = errors.New("signing: no private key")
	// ErrExposed is wrapped when a private key file is readable by others.
	ErrExposed = errors.New("signing: private key readable by others")
)

// Signature is the "signature" member of a signed file.
type Signature struct {
	Alg string `json:"alg"`
	Key string `json:"key"`
	Sig string `json:"sig"`
}

// Payload returns the bytes a signature of kind covers (see the package
// doc): the header, then each field length-prefixed.
func Payload(kind string, fields ...string) []byte {
	return AppendPayload(nil, kind, fields...)
}

// AppendPayload appends [Payload] of kind and fields to b, so that a
// verifier can build payloads into a buffer it reuses.
func AppendPayload(b []byte, kind string, fields ...string) []byte {
	n := len(magic) + len(kind) + 2
	for _, f := range fields {
		n += len(f) + 12
	}
	b = slices.Grow(b, n)
	b = append(b, magic...)
	b = append(b, '\n')
	b = append(b, kind...)
	b = append(b, '\n')
	for _, f := range fields {
		b = strconv.AppendInt(b, int64(len(f)), 10)
		b = append(b, ':')
		b = append(b, f...)
		b = append(b, '\n')
	}
	return b
}

// Signer signs as one agent.
type Signer struct {
	agent string
	priv  ed25519.PrivateKey
	pub   string
}

// NewSigner returns a signer for agent with key priv.
func NewSigner(agent string, priv ed25519.PrivateKey) *Signer {
	return &Signer{agent: agent, priv: priv, pub: keyring.FormatPublic(priv.Public().(ed25519.PublicKey))}
}

// Agent returns the agent the signer signs as.
func (s *Signer) Agent() string { return s.agent }

// PublicKey returns the signer's public key, as the keyring writes it.
func (s *Signer) PublicKey() string { return s.pub }

// Sign signs payload. A nil Signer signs nothing and returns nil.
func (s *Signer) Sign(payload []byte) *Signature {
	if s == nil {
		return nil
	}
	sig := ed25519.Sign(s.priv, payload)
	return &Signature{Alg: Alg, Key: s.pub, Sig: base64.StdEncoding.EncodeToString(sig)}
}

// DefaultKeyPath returns where agent's private key lives by default:
// $XDG_CONFIG_HOME/collab/keys/AGENT.key, else ~/.config/collab/keys/AGENT.key.
func DefaultKeyPath(agent string, getenv func(string) string) string {
	base := getenv("XDG_CONFIG_HOME")
	if base == "" {
		home := getenv("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "collab", "keys", agent+".key")
}

// NewKey makes a key pair for agent and writes the private key to path
// (mode 0600, its folder made 0700 if missing). An existing file is
// replaced only with replace.
func NewKey(path, agent string, replace bool) (*Signer, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return nil, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("key folder: %w", err)
	}
	if err := writeKey(path, data, replace); err != nil {
		return nil, err
	}
	return NewSigner(agent, priv), nil
}

// writeKey writes a private key file atomically: a temp file made 0600
// with O_EXCL, written, synced, then linked to path (no replace) or, with
// replace, renamed over it.
func writeKey(path string, data []byte, replace bool) (err error) {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	if replace {
		err = os.Rename(tmp, path)
	} else {
		err = os.Link(tmp, path)
		os.Remove(tmp)
	}
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists; pass --force to replace it (the old key then signs nothing new)", path)
	}
	if err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// LoadKey reads agent's private key from path. A missing file wraps
// [ErrNoKey]; one its group or others may read wraps [ErrExposed].
func LoadKey(path, agent string) (*Signer, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, ErrNoKey)
	}
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("private key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s (mode %v): %w; run chmod 600 %s", path, fi.Mode().Perm(), ErrExposed, path)
	}
	data := make([]byte, 16<<10)
	n, _ := f.Read(data)
	block, _ := pem.Decode(data[:n])
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: not a PEM private key", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an ed25519 key", path)
	}
	return NewSigner(agent, priv), nil
}

// Verdict is the outcome of checking a sender's signature.
type Verdict int

// Verdicts.
const (
	Unsigned Verdict = iota
	Verified
	BadSignature
	UnknownKey
	RevokedKey
)

var verdictNames = [...]string{"unsigned", "verified", "bad-signature", "unknown-key", "revoked-key"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// MarshalText implements encoding.TextMarshaler.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// Keys is what a Verifier needs of a keyring.
type Keys interface {
	Find(agent, pub string) (keyring.Key, error)
	HasKeys(agent string) bool
}

// Verifier checks signatures against a keyring, remembering each check. A
// nil Verifier, or one with no keyring, finds every signature's key
// unknown. It is safe for concurrent use.
type Verifier struct {
	keys Keys

	mu   sync.Mutex
	good map[[32]byte]bool // by digest of key, signature and payload
}

// maxRemembered bounds the remembered checks; beyond it they are forgotten
// all at once.
const maxRemembered = 1 << 16

// NewVerifier returns a Verifier that trusts keys.
func NewVerifier(keys Keys) *Verifier {
	return &Verifier{keys: keys, good: make(map[[32]byte]bool)}
}

// Verify checks sig, made by agent at time signed over payload.
func (v *Verifier) Verify(agent string, signed time.Time, payload []byte, sig *Signature) Verdict {
	return v.verify(agent, signed, true, payload, sig)
}

// VerifyNamed checks sig, made by agent over payload, for a file whose
// name carries the time named and which claims to have been made at
// claimed (either zero when there is none): it is judged at [SignedAt],
// and is a bad signature when the claimed time lies more than [MaxSkew]
// before the named one (see the package doc).
func (v *Verifier) VerifyNamed(agent string, named, claimed time.Time, payload []byte, sig *Signature) Verdict {
	at, ok := SignedAt(named, claimed)
	return v.verify(agent, at, ok, payload, sig)
}

// verify checks sig as made at signed; inTime false makes a signature
// that checks a bad one (its claimed time does not hold).
func (v *Verifier) verify(agent string, signed time.Time, inTime bool, payload []byte, sig *Signature) Verdict {
	if sig == nil {
		return Unsigned
	}
	if v == nil || v.keys == nil || sig.Alg != Alg {
		return UnknownKey
	}
	k, err := v.keys.Find(agent, sig.Key)
	if err != nil {
		return UnknownKey
	}
	if !v.check(k.Public, sig.Sig, payload) || !inTime {
		return BadSignature
	}
	if !k.GoodAt(signed) {
		return RevokedKey
	}
	return Verified
}

// MaxSkew is the clock-skew allowance: how far the time a signed file
// claims may lie before the time its name carries ([SignedAt]), and how
// far a reader lets a message's name lag behind the newest name it has
// seen (channel.DefaultSkewWindow), since both come from writers' clocks.
const MaxSkew = time.Hour

// SignedAt returns the time a signature on a file is judged at: the later
// of named, the time its name carries, and claimed, the time it claims
// (either alone when the other is zero), so that dating a file before a
// key's revocation does not make it verify. ok is false when claimed lies
// more than [MaxSkew] before named.
func SignedAt(named, claimed time.Time) (at time.Time, ok bool) {
	switch {
	case named.IsZero():
		return claimed, true
	case claimed.IsZero():
		return named, true
	case claimed.Before(named.Add(-MaxSkew)):
		return named, false
	case claimed.After(named):
		return claimed, true
	}
	return named, true
}

// check reports whether sig is pub's signature of payload.
func (v *Verifier) check(pub, sig string, payload []byte) bool {
	if v.good == nil {
		return verify(pub, sig, payload)
	}
	h := sha256.New()
	h.Write([]byte(pub))
	h.Write([]byte{0})
	h.Write([]byte(sig))
	h.Write([]byte{0})
	h.Write(payload)
	var d [32]byte
	h.Sum(d[:0])
	v.mu.Lock()
	ok, seen := v.good[d]
	v.mu.Unlock()
	if seen {
		return ok
	}
	ok = verify(pub, sig, payload)
	v.mu.Lock()
	if len(v.good) >= maxRemembered {
		clear(v.good)
	}
	v.good[d] = ok
	v.mu.Unlock()
	return ok
}

// verify reports whether sig is pub's signature of payload.
func verify(pub, sig string, payload []byte) bool {
	key, err := keyring.ParsePublic(pub)
	s, err2 := base64.StdEncoding.Strict().DecodeString(sig)
	return err == nil && err2 == nil && len(s) == ed25519.SignatureSize && ed25519.Verify(key, payload, s)
}

// Forgetful makes v remember no check: for a reader that looks at each
// file once (a command such as read or who), where remembering costs a
// digest of every payload and saves nothing. It returns v.
func (v *Verifier) Forgetful() *Verifier {
	v.good = nil
	return v
}

// HasKeys reports whether agent has keys in the keyring (see
// [keyring.Ring.HasKeys]).
func (v *Verifier) HasKeys(agent string) bool {
	return v != nil && v.keys != nil && v.keys.HasKeys(agent)
}

// Forged reports whether a file that names agent as its sender, with
// verdict, is a forgery: a bad or revoked signature, or anything but a good
// signature in the name of an agent with keys. (What merely cannot be
// checked, an unsigned file from an agent without keys, is not.)
func (v *Verifier) Forged(agent string, verdict Verdict) bool {
	switch verdict {
	case Verified:
		return false
	case BadSignature, RevokedKey:
		return true
	}
	return v.HasKeys(agent)
}

// Mark is the tag readers show after the sender of a file that does not
// verify, and whether it is a forgery: upper case for a forgery
// ("[BAD SIGNATURE]"), lower case for what merely cannot be checked
// ("(unsigned)"); "" for a verified file.
func (v *Verifier) Mark(agent string, verdict Verdict) (string, bool) {
	words := strings.ReplaceAll(verdict.String(), "-", " ")
	switch {
	case verdict == Verified:
		return "", false
	case v.Forged(agent, verdict):
		return "[" + strings.ToUpper(words) + "]", true
	default:
		return "(" + words + ")", false
	}
}

// ParseVerdict returns the verdict whose text is s.
func ParseVerdict(s string) (Verdict, bool) {
	for i, name := range verdictNames {
		if name == s {
			return Verdict(i), true
		}
	}
	return 0, false
}

// Policy says which senders a watcher acts on.
type Policy string

// Policies.
const (
	// Any acts on every message, signed or not (collab before signatures).
	Any Policy = "any"
	// Known refuses what names a sender that has a key but does not verify
	// as that sender; senders without keys are taken at their word.
	Known Policy = "known"
	// Signed acts only on verified senders.
	Signed Policy = "signed"
)

// DefaultPolicy is the watcher's default.
const DefaultPolicy = Known

// ParsePolicy parses a --trust value.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case Any, Known, Signed:
		return p, nil
	}
	return "", fmt.Errorf("trust %q: use any, known or signed", s)
}

// Accepts reports whether policy p lets a file that names agent as its
// sender, with verdict, be acted on. Under Known, only a sender with keys
// must verify.
func (v *Verifier) Accepts(p Policy, agent string, verdict Verdict) bool {
	switch p {
	case Any:
		return true
	case Signed:
		return verdict == Verified
	default:
		return verdict == Verified || !v.HasKeys(agent)
	}
}
