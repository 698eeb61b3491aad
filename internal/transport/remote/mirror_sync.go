package remote

// The mount's keyring and kill requests, copied into the mirror.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/bridge"
)

// syncKeys mirrors the keyring of the mount into Dir/keys.
func (m *Mirror) syncKeys(ctx context.Context) error {
	var r bridge.KeysReply
	if err := m.cfg.Client.request(ctx, bridge.OpKeys, []byte("{}"), &r); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	d, err := safedir.Create(m.root.Keys())
	if err != nil {
		return &localError{err}
	}
	defer d.Close()
	for name, data := range r.Keys {
		if _, err := bridge.KeyFileAgent(name, data); err != nil {
			m.log.Warn("mirror: a key file refused", "err", err)
			continue
		}
		old, _, err := d.ReadFile(name, bridge.MaxKeyFileLen)
		if err == nil && string(old) == string(data) {
			continue
		}
		if err := d.Replace(name, data, 0o644); err != nil {
			return &localError{fmt.Errorf("keys: %w", err)}
		}
	}
	m.mu.Lock()
	m.keysOK = true
	m.mu.Unlock()
	if r.More {
		return nil // a partial list: nothing is removed
	}
	entries, err := d.ReadDir()
	if err != nil {
		return &localError{fmt.Errorf("keys: %w", err)}
	}
	for _, e := range entries {
		if _, ok := r.Keys[e.Name()]; !ok && strings.HasSuffix(e.Name(), ".json") {
			if err := d.Remove(e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return &localError{fmt.Errorf("keys: %w", err)}
			}
		}
	}
	return nil
}

// syncKills asks the bridge for the kill requests of the jobs in the
// mirror's jobs folder that have none yet, and writes those whose
// requester's signature verifies.
func (m *Mirror) syncKills(ctx context.Context) error {
	d, err := safedir.Open(m.root.Jobs(m.cfg.Agent))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &localError{err}
	}
	entries, err := d.ReadDir()
	d.Close()
	if err != nil {
		return &localError{err}
	}
	have := map[string]bool{}
	var ids []string
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".kill"); ok {
			have[id] = true
		}
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if ok && strings.HasPrefix(id, "job-") && !have[id] && !safedir.IsTemp(e.Name()) && len(ids) < bridge.MaxKillJobs {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	body, err := json.Marshal(bridge.KillsRequest{Jobs: ids})
	if err != nil {
		return err
	}
	var r bridge.KillsReply
	if err := m.cfg.Client.request(ctx, bridge.OpKills, body, &r); err != nil {
		return fmt.Errorf("kills: %w", err)
	}
	for _, id := range ids {
		raw, ok := r.Kills[id]
		if !ok {
			continue
		}
		var k jobs.Kill
		if err := json.Unmarshal(raw, &k); err != nil {
			m.warnKill(id, "does not decode", err)
			continue
		}
		if v := k.Verify(m.cfg.Verifier, m.cfg.Agent, id); v != signing.Verified {
			m.warnKill(id, "by "+tree.Printable(k.By)+": "+v.String(), nil)
			continue
		}
		if err := jobs.WriteKill(m.root, m.cfg.Agent, id, k); err != nil {
			return &localError{fmt.Errorf("kill %s: %w", id, err)}
		}
		m.log.Info("mirror: kill request", "job", id, "by", k.By)
	}
	return nil
}

func (m *Mirror) warnKill(job, why string, err error) {
	m.mu.Lock()
	said := m.warned[job]
	m.warned[job] = true
	m.mu.Unlock()
	if !said {
		m.log.Warn("mirror: a kill request not written: "+why, "job", job, "err", err)
	}
}
