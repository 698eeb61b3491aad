package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/keyring"
)

// Keys is the operations on the tree's keyring (package keyring): the
// public keys readers trust, which only the tree's admin account may
// change. The Workspace holds them.
type Keys interface {
	// Keys lists the keys of agents (none: every agent), by agent.
	Keys(ctx context.Context, req KeyRequest, agents []string) (KeyList, error)
	// TrustKey trusts req.Public as req.Agent's; a public key that does
	// not parse is Invalid.
	TrustKey(ctx context.Context, req KeyRequest) (KeyList, error)
	// RevokeKey revokes req.Public (""; every key of req.Agent) from
	// req.At (zero: now); a key not in the list is NotFound.
	RevokeKey(ctx context.Context, req KeyRequest) (KeyList, error)
}

// KeyRequest names a keyring and a key.
type KeyRequest struct {
	// Keyring is the keyring folder; "" is the tree's (ROOT/keys).
	Keyring string
	// Agent is NAME or NAME@INSTANCE.
	Agent string
	// Public is a base64 ed25519 public key, as collab key new prints.
	Public string
	// At is when a revocation starts; zero: now.
	At time.Time
}

// KeyEntry is one trusted (or revoked) key.
type KeyEntry struct {
	Agent   string     `json:"agent"`
	Key     string     `json:"key"`
	Added   time.Time  `json:"added"`
	Revoked *time.Time `json:"revoked,omitempty"`
}

// KeyList is keys and what a reader should know of the keyring.
type KeyList struct {
	Keys []KeyEntry
	// Dir is the keyring's folder.
	Dir string
	// Unsafe, when not nil, says why the keyring could be rewritten by
	// others than its admin: until it is fixed its verdicts prove nothing.
	Unsafe error
}

// ring opens req's keyring.
func (m *Mount) ring(req KeyRequest) *keyring.Ring {
	if req.Keyring != "" {
		return keyring.Open(req.Keyring)
	}
	return keyring.Open(m.cfg.Root.Keys())
}

// Keys implements Workspace.
func (m *Mount) Keys(_ context.Context, req KeyRequest, agents []string) (KeyList, error) {
	var ids []string
	for _, a := range agents {
		id, err := parseAgent("agent", a)
		if err != nil {
			return KeyList{}, err
		}
		ids = append(ids, id)
	}
	return m.keyList(m.ring(req), ids)
}

// keyList lists the keys of agents (nil: all) in ring, with its check.
func (m *Mount) keyList(ring *keyring.Ring, agents []string) (KeyList, error) {
	out := KeyList{Dir: ring.Dir(), Keys: []KeyEntry{}}
	if err := ring.Check(keyring.Owner(string(m.cfg.Root)), true); err != nil {
		out.Unsafe = err
	}
	all, err := ring.List()
	if err != nil {
		return KeyList{}, errkind.Wrap(errkind.Of(err), err)
	}
	if agents == nil {
		for a := range all {
			agents = append(agents, a)
		}
		slices.Sort(agents)
	}
	for _, a := range agents {
		for _, k := range all[a] {
			out.Keys = append(out.Keys, KeyEntry{a, k.Public, k.Added, k.Revoked})
		}
	}
	return out, nil
}

// TrustKey implements Workspace.
func (m *Mount) TrustKey(_ context.Context, req KeyRequest) (KeyList, error) {
	id, err := parseAgent("agent", req.Agent)
	if err != nil {
		return KeyList{}, err
	}
	if _, err := keyring.ParsePublic(req.Public); err != nil {
		return KeyList{}, errkind.Wrap(errkind.Invalid, fmt.Errorf("%w; give the base64 public key 'collab key new' printed", err))
	}
	ring := m.ring(req)
	if err := ring.Trust(id, req.Public); err != nil {
		return KeyList{}, errkind.Wrap(errkind.Of(err), err)
	}
	return m.keyList(ring, []string{id})
}

// RevokeKey implements Workspace.
func (m *Mount) RevokeKey(_ context.Context, req KeyRequest) (KeyList, error) {
	id, err := parseAgent("agent", req.Agent)
	if err != nil {
		return KeyList{}, err
	}
	if req.Public != "" {
		if _, err := keyring.ParsePublic(req.Public); err != nil {
			return KeyList{}, errkind.Wrap(errkind.Invalid, err)
		}
	}
	at := req.At
	if at.IsZero() {
		at = m.cfg.Now()
	}
	ring := m.ring(req)
	err = ring.Revoke(id, req.Public, at)
	if errors.Is(err, keyring.ErrNotFound) {
		return KeyList{}, errkind.Wrap(errkind.NotFound, err)
	}
	if err != nil {
		return KeyList{}, errkind.Wrap(errkind.Of(err), err)
	}
	return m.keyList(ring, []string{id})
}
