package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/workspace/registry"
)

// Agents is the registry of agents (package registry, ROOT/registry/
// agents): an agent that has no watcher, such as a script or a model
// driving collab through MCP, registers itself so that who and a
// message's delivery status know it, and unregisters when it is done.
//
// The actor is the agent registered. It signs its entry with its key;
// an agent with keys in the keyring and no key is Forbidden, as its
// unsigned entry would be a forgery. Removing an entry cannot carry a
// signature, so it asks for one instead: when the agent has keys, the
// actor's key must verify as the agent's; when the entry is signed, the
// actor must hold the key that signed it. An unsigned entry of an agent
// without keys may be removed by anyone who can write the tree.
type Agents interface {
	// RegisterAgent writes (or replaces) the actor's registry entry and
	// returns it. The runtime is required; role defaults to "worker" and
	// host to this host's name. Members written by hand (Extra) of an
	// entry replaced are kept.
	RegisterAgent(ctx context.Context, a Actor, r AgentRegistration) (registry.Agent, error)
	// UnregisterAgent removes the actor's entry and returns what it was;
	// NotFound when there is none.
	UnregisterAgent(ctx context.Context, a Actor) (registry.Agent, error)
}

// AgentRegistration is what an agent registers.
type AgentRegistration struct {
	Role, Runtime, Host string
	Capabilities        []string
}

// registryError classifies an error of package registry.
func registryError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, registry.ErrInvalid):
		return errkind.Wrap(errkind.Invalid, err)
	case errors.Is(err, registry.ErrNotRegistered):
		return errkind.Wrap(errkind.NotFound, err)
	}
	return errkind.Wrap(errkind.Of(err), err)
}

// registrant reads the actor as the agent it registers, with its signer.
func (m *Mount) registrant(a Actor) (string, error) {
	id, err := parseAgent("agent", a.Name)
	if err != nil {
		return "", err
	}
	if a.Signer != nil && a.Signer.Agent() != id {
		return "", errkind.New(errkind.Forbidden, "the key is %s's, not %s's", a.Signer.Agent(), id)
	}
	return id, nil
}

// RegisterAgent implements Agents.
func (m *Mount) RegisterAgent(_ context.Context, a Actor, r AgentRegistration) (registry.Agent, error) {
	id, err := m.registrant(a)
	if err != nil {
		return registry.Agent{}, err
	}
	if strings.TrimSpace(r.Runtime) == "" {
		return registry.Agent{}, errkind.New(errkind.Invalid, "register %s: the runtime is required (claude_code, codex, a script…)", id)
	}
	if a.Signer == nil && m.cfg.Verifier.HasKeys(id) {
		return registry.Agent{}, errkind.New(errkind.Forbidden, "%s has keys in the keyring, so its unsigned entry would be taken for a forgery; pass --key (or COLLAB_KEY)", id)
	}
	caps := slices.Compact(slices.Sorted(slices.Values(r.Capabilities)))
	entry := registry.Agent{ID: id, Role: cmp.Or(r.Role, "worker"), Runtime: r.Runtime, Host: cmp.Or(r.Host, m.cfg.Host),
		Capabilities: caps, Registered: m.cfg.Now().UTC().Format(time.RFC3339Nano)}
	if old, err := registry.Read(m.cfg.Root, id); err == nil {
		entry.Extra = old.Extra
	}
	if err := registry.Check(entry); err != nil {
		return registry.Agent{}, registryError(err)
	}
	if err := entry.Sign(a.Signer); err != nil {
		return registry.Agent{}, errkind.Wrap(errkind.Forbidden, err)
	}
	if err := registry.Write(m.cfg.Root, entry); err != nil {
		return registry.Agent{}, registryError(fmt.Errorf("register %s: %w", id, err))
	}
	return entry, nil
}

// UnregisterAgent implements Agents.
func (m *Mount) UnregisterAgent(_ context.Context, a Actor) (registry.Agent, error) {
	id, err := m.registrant(a)
	if err != nil {
		return registry.Agent{}, err
	}
	old, err := registry.Read(m.cfg.Root, id)
	if err != nil {
		return registry.Agent{}, registryError(fmt.Errorf("unregister: %w", err))
	}
	if err := m.mayUnregister(a.Signer, id, old); err != nil {
		return registry.Agent{}, err
	}
	if err := registry.Remove(m.cfg.Root, id); err != nil {
		return registry.Agent{}, registryError(fmt.Errorf("unregister: %w", err))
	}
	return old, nil
}

// mayUnregister is the rule for removing agent id's entry old with
// signer (see Agents).
func (m *Mount) mayUnregister(signer *signing.Signer, id string, old registry.Agent) error {
	switch {
	case m.cfg.Verifier.HasKeys(id):
		if signer == nil {
			return errkind.New(errkind.Forbidden, "%s has keys in the keyring: unregister it with its key (--key or COLLAB_KEY)", id)
		}
		proof := signing.Payload(registry.Kind, "unregister", id)
		if v := m.cfg.Verifier.Verify(id, m.cfg.Now(), proof, signer.Sign(proof)); v != signing.Verified {
			return errkind.New(errkind.Forbidden, "the key given is not one of %s's in the keyring (%s)", id, v)
		}
	case old.Signature != nil:
		if signer == nil || signer.PublicKey() != old.Signature.Key {
			return errkind.New(errkind.Forbidden, "the entry of %s is signed: unregister it with the key that signed it", id)
		}
	}
	return nil
}
