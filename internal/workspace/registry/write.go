package registry

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/agentfiles"
	"github.com/collabdev/collab/internal/plumbing/jsonobj"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Kind is the payload kind of a signed registry entry.
const Kind = "registry"

// Limits on what Write takes.
const (
	MaxField        = 200 // bytes of role, runtime and host
	MaxCapabilities = 32
	MaxCapability   = 64 // bytes of one capability
)

// ErrInvalid is wrapped by Write's error for an entry that breaks the
// rules above.
var ErrInvalid = errors.New("registry: invalid entry")

// ErrNotRegistered: Remove found no entry.
var ErrNotRegistered = errors.New("registry: not registered")

// known are the members Encode writes; Extra never overwrites them.
var known = []string{"id", "role", "host", "runtime", "capabilities", "registered", signing.Field}

// Payload returns the bytes an entry's signature covers: kind "registry"
// over the agent (the file's name, which id must equal), role, host,
// runtime, registered, the number of capabilities (decimal) and each one.
// Extra members are not signed.
func (a Agent) Payload() []byte {
	fields := []string{a.ID, a.Role, a.Host, a.Runtime, a.Registered, strconv.Itoa(len(a.Capabilities))}
	return signing.Payload(Kind, append(fields, a.Capabilities...)...)
}

// Sign signs a with signer, which must be a.ID's key; nil removes any
// signature.
func (a *Agent) Sign(signer *signing.Signer) error {
	if signer == nil {
		a.Signature = nil
		return nil
	}
	if signer.Agent() != a.ID {
		return fmt.Errorf("registry: the entry of %s is signed with its own key, not %s's", a.ID, signer.Agent())
	}
	a.Signature = signer.Sign(a.Payload())
	return nil
}

// Verify returns the verdict on a as its agent's entry, at its
// registered time.
func (a Agent) Verify(v *signing.Verifier) signing.Verdict {
	if a.Signature == nil {
		return signing.Unsigned
	}
	at, err := time.Parse(time.RFC3339Nano, a.Registered)
	if err != nil {
		return signing.BadSignature
	}
	return v.Verify(a.ID, at, a.Payload(), a.Signature)
}

// Forged reports whether a is a forgery under v ([signing.Verifier.Forged]):
// a bad or revoked signature, or anything but a good one for an agent
// with keys. A nil v judges nothing: false.
func (a Agent) Forged(v *signing.Verifier) bool {
	return v != nil && v.Forged(a.ID, a.Verify(v))
}

// Check checks an entry before it is written: a valid agent name, one
// line of printable UTF-8 for role, runtime and host, at most
// MaxCapabilities capabilities of one word each (no comma or space).
func Check(a Agent) error {
	if err := tree.CheckName("agent", a.ID); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	for _, f := range []struct{ what, s string }{{"role", a.Role}, {"runtime", a.Runtime}, {"host", a.Host}} {
		if len(f.s) > MaxField || !utf8.ValidString(f.s) || tree.Printable(f.s) != f.s || strings.ContainsAny(f.s, "\n\r") {
			return fmt.Errorf("%w: the %s must be one printable line of at most %d bytes", ErrInvalid, f.what, MaxField)
		}
	}
	if len(a.Capabilities) > MaxCapabilities {
		return fmt.Errorf("%w: more than %d capabilities", ErrInvalid, MaxCapabilities)
	}
	for _, c := range a.Capabilities {
		if c == "" || len(c) > MaxCapability || !utf8.ValidString(c) || strings.ContainsFunc(c, func(r rune) bool { return r <= ' ' || r == ',' || r == 0x7f }) {
			return fmt.Errorf("%w: capability %q (one word of at most %d bytes)", ErrInvalid, tree.Printable(c), MaxCapability)
		}
	}
	return nil
}

// Encode returns a's file: the known members, then Extra's.
func (a Agent) Encode() ([]byte, error) {
	var w jsonobj.Writer
	w.Field("id", a.ID)
	for _, f := range []struct{ key, v string }{{"role", a.Role}, {"host", a.Host}, {"runtime", a.Runtime}} {
		if f.v != "" {
			w.Field(f.key, f.v)
		}
	}
	if len(a.Capabilities) > 0 {
		w.Field("capabilities", a.Capabilities)
	}
	if a.Registered != "" {
		w.Field("registered", a.Registered)
	}
	if a.Signature != nil {
		w.Field(signing.Field, a.Signature)
	}
	w.Extra(a.Extra, known...)
	b, err := w.Bytes()
	return append(b, '\n'), err
}

// MarshalJSON is a as its file holds it (Encode).
func (a Agent) MarshalJSON() ([]byte, error) { return a.Encode() }

// Write checks a and atomically replaces its agent's entry (a temp file,
// fsync, rename, directory fsync), creating the folder if needed.
func Write(root tree.Root, a Agent) error {
	if err := Check(a); err != nil {
		return err
	}
	data, err := a.Encode()
	if err != nil {
		return fmt.Errorf("write registry entry of %s: %w", a.ID, err)
	}
	d, err := safedir.Create(root.Registry())
	if err != nil {
		return fmt.Errorf("write registry entry of %s: %w", a.ID, err)
	}
	defer d.Close()
	if err := d.Replace(agentfiles.Name(a.ID), data, 0o666); err != nil {
		return fmt.Errorf("write registry entry of %s: %w", a.ID, err)
	}
	return nil
}

// Read returns agent id's entry; an error wrapping ErrNotRegistered when
// it has none.
func Read(root tree.Root, id string) (Agent, error) {
	if err := tree.CheckName("agent", id); err != nil {
		return Agent{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	d, err := safedir.Open(root.Registry())
	if errors.Is(err, fs.ErrNotExist) {
		return Agent{}, fmt.Errorf("%w: %s", ErrNotRegistered, id)
	}
	if err != nil {
		return Agent{}, err
	}
	defer d.Close()
	data, _, err := d.ReadFile(agentfiles.Name(id), MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return Agent{}, fmt.Errorf("%w: %s", ErrNotRegistered, id)
	}
	if err != nil {
		return Agent{}, err
	}
	return decode(data, id)
}

// Remove removes agent id's entry; ErrNotRegistered when there is none.
func Remove(root tree.Root, id string) error {
	if err := tree.CheckName("agent", id); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	d, err := safedir.Open(root.Registry())
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotRegistered, id)
	}
	if err != nil {
		return err
	}
	defer d.Close()
	err = d.Remove(agentfiles.Name(id))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotRegistered, id)
	}
	return err
}
