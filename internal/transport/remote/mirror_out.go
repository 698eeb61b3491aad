package remote

// Mirror out: what the watcher writes on the mirror as its agent, sent
// to the mount through the bridge.

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/agentfiles"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/bridge"
)

// runOut sends what the watcher writes as its agent, on fsnotify's word
// and each poll, until ctx ends.
func (m *Mirror) runOut(ctx context.Context) error {
	hints := fswake.Folders{
		Dirs: append([]string{m.root.Channels(), m.root.Presence()}, m.channelDirs()...),
		Grow: m.root.Channels(), // a new channel folder
		Lax:  true,
	}
	hctx, stopHints := context.WithCancel(ctx)
	defer stopHints()
	go func() {
		err := hints.Watch(hctx, func(dir, name string) {
			if dir == "" || m.interesting(filepath.Join(dir, name)) {
				m.poke()
			}
		})
		if err != nil {
			m.log.Warn("mirror: no fsnotify; polling only", "err", err)
		}
	}()
	t := time.NewTicker(m.cfg.Poll)
	defer t.Stop()
	for {
		if err := m.outOnce(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-m.wake:
		}
	}
}

// interesting reports whether a change to path may be something to send:
// not a message of another agent (the mirror in writes many).
func (m *Mirror) interesting(path string) bool {
	if safedir.IsTemp(filepath.Base(path)) {
		return false // its link under its name comes next
	}
	n, err := channel.ParseName(filepath.Base(path))
	return err != nil || n.Agent == m.cfg.Agent
}

func (m *Mirror) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// channelDirs lists the mirror's channel folders.
func (m *Mirror) channelDirs() []string {
	entries, _ := os.ReadDir(m.root.Channels())
	var out []string
	for _, e := range entries {
		if e.IsDir() && tree.ValidName(e.Name()) {
			out = append(out, m.root.Channel(e.Name()))
		}
	}
	return out
}

// outOnce queues the agent's new messages in the outbox, flushes it, and
// sends the presence file when it changed. Only a local failure is
// returned; the bridge's is retried.
func (m *Mirror) outOnce(ctx context.Context) error {
	for _, dir := range m.channelDirs() {
		if err := m.queueChannel(filepath.Base(dir)); err != nil {
			return &localError{err}
		}
	}
	if entries, err := m.cfg.Client.Outbox(); err == nil && len(entries) > 0 {
		res := m.cfg.Client.Flush(ctx)
		for _, r := range res.Refused {
			m.log.Error("mirror: the bridge refused a write; kept in the outbox's failed/", "err", r)
		}
		m.mu.Lock()
		said := m.queued
		m.queued = res.Left > 0
		m.mu.Unlock()
		switch {
		case res.Left > 0 && !said:
			m.log.Warn("mirror: writes wait in the outbox for the bridge", "left", res.Left, "err", res.Err)
		case res.Left == 0 && said:
			m.log.Info("mirror: the outbox is sent")
		}
	}
	m.sendPresence(ctx)
	return nil
}

// queueChannel adds the agent's messages in the mirror's channel ch that
// are not queued yet (by the cursor) and did not come from the mount to
// the outbox, oldest first, then saves the cursor.
func (m *Mirror) queueChannel(ch string) error {
	m.mu.Lock()
	cur := &outCursor{Floor: m.cfg.Now().Add(-outMargin).UTC()} // a channel the mirror did not know: what is in it came in
	if c := m.st.Out[ch]; c != nil {
		cur = &outCursor{Floor: c.Floor, Sent: slices.Clone(c.Sent)}
	}
	m.mu.Unlock()
	d, err := safedir.Open(m.root.Channel(ch))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	sent := make(map[string]bool, len(cur.Sent))
	for _, id := range cur.Sent {
		sent[id] = true
	}
	floor := cur.Floor.Truncate(time.Second)
	type cand struct {
		name string
		n    channel.Name
	}
	var cands []cand
	err = d.ReadDirBatches(256, func(entries []fs.DirEntry) error {
		for _, e := range entries {
			n, err := channel.ParseName(e.Name())
			if err != nil || n.Agent != m.cfg.Agent || n.Time.Before(floor) || sent[strings.TrimSuffix(e.Name(), ".json")] {
				continue
			}
			cands = append(cands, cand{e.Name(), n})
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if c := a.n.Time.Compare(b.n.Time); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	changed := false
	for _, c := range cands {
		id := strings.TrimSuffix(c.name, ".json")
		m.mu.Lock()
		_, came := m.fromIn[id]
		delete(m.fromIn, id) // in the cursor from now on
		m.mu.Unlock()
		if !came {
			data, _, err := d.ReadFile(c.name, channel.MaxMessageSize)
			if err != nil {
				continue
			}
			msg, err := channel.Decode(data, c.name, ch)
			if err != nil || msg.From != m.cfg.Agent {
				continue
			}
			body, err := json.Marshal(bridge.PostRequest{Channel: ch, Message: data})
			if err != nil {
				return err
			}
			if _, err := m.cfg.Client.box.add(bridge.OpPost, body, false); err != nil {
				return err
			}
		}
		cur.Sent = append(cur.Sent, id)
		if t := c.n.Time.Add(-outMargin); t.After(cur.Floor) {
			cur.Floor = t
		}
		changed = true
	}
	if !changed {
		return nil
	}
	keep := cur.Sent[:0]
	for _, id := range cur.Sent {
		if n, err := channel.ParseID(id); err == nil && !n.Time.Before(cur.Floor.Truncate(time.Second)) {
			keep = append(keep, id)
		}
	}
	cur.Sent = keep
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st.Out[ch] = cur
	return m.save()
}

// sendPresence sends the agent's presence file when it changed since it
// was last sent (the latest only: a heartbeat that fails is retried by the
// next one).
func (m *Mirror) sendPresence(ctx context.Context) {
	d, err := safedir.Open(m.root.Presence())
	if err != nil {
		return
	}
	data, _, err := d.ReadFile(agentfiles.Name(m.cfg.Agent), 64<<10)
	d.Close()
	m.mu.Lock()
	same := string(data) == string(m.lastPre)
	m.mu.Unlock()
	if err != nil || same {
		return
	}
	body, err := json.Marshal(bridge.PresenceRequest{Presence: data})
	if err != nil {
		return
	}
	var r bridge.PresenceReply
	if err := m.cfg.Client.request(ctx, bridge.OpPresence, body, &r); err != nil {
		m.log.Debug("mirror: presence not sent; the next heartbeat retries", "err", err)
		return
	}
	m.mu.Lock()
	m.lastPre = data
	m.mu.Unlock()
}
