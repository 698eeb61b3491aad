package remote

// Mirror in: the stream's messages of the mirrored channels, written
// into the mirror's tree as the mount has them.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// dirBatch holds the mirror's channel folders open for one batch of
// writes, whose names one folder fsync each makes durable (sync) before
// the position past them is saved: a crash before it loses names the
// stream or the files give again.
type dirBatch struct {
	root tree.Root
	dirs map[string]*safedir.Dir
}

func (b *dirBatch) dir(ch string) (*safedir.Dir, error) {
	if d, ok := b.dirs[ch]; ok {
		return d, nil
	}
	d, err := safedir.Create(b.root.Channel(ch))
	if err != nil {
		return nil, err
	}
	if b.dirs == nil {
		b.dirs = map[string]*safedir.Dir{}
	}
	b.dirs[ch] = d
	return d, nil
}

// sync makes every name written durable and closes the folders.
func (b *dirBatch) sync() error {
	var errs []error
	for ch, d := range b.dirs {
		if err := d.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("sync %s: %w", ch, err))
		}
		d.Close()
	}
	b.dirs = nil
	return errors.Join(errs...)
}

// close closes the folders without a sync (nothing past them is saved).
func (b *dirBatch) close() {
	for _, d := range b.dirs {
		d.Close()
	}
	b.dirs = nil
}

// put validates a message and publishes data as Dir/channels/ch/id.json
// in b (durable once b is synced). It reports whether it wrote the file
// (false: it was there).
func (m *Mirror) put(b *dirBatch, ch, id string, data []byte) (bool, error) {
	if err := tree.CheckName("channel", ch); err != nil {
		return false, err
	}
	if _, err := channel.ParseID(id); err != nil {
		return false, fmt.Errorf("message id %q: %w", id, err)
	}
	msg, err := channel.Decode(data, id+".json", ch)
	if err != nil {
		return false, err
	}
	if msg.SessionID != ch {
		return false, fmt.Errorf("%w: session_id %q in channel %q", channel.ErrMalformed, msg.SessionID, ch)
	}
	d, err := b.dir(ch)
	if err != nil {
		return false, err
	}
	err = d.PublishUnsynced(id+".json", data, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if msg.From == m.cfg.Agent {
		m.mu.Lock()
		m.fromIn[id] = struct{}{}
		m.mu.Unlock()
	}
	return true, nil
}

// runIn mirrors the stream into the tree until ctx ends. Trouble with
// NATS is logged and retried each poll; a tree that cannot be written,
// and a stream that does not allow direct gets, are returned.
func (m *Mirror) runIn(ctx context.Context) error {
	r, err := newStreamReader(m.cfg.Stream, m.cfg.Channels, m.cfg.Client.cfg.Timeout)
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	defer r.close()
	down := ""
	restart := true
	for tick := 0; ctx.Err() == nil; tick++ {
		more, found, err := m.inOnce(ctx, r, tick, restart)
		var local *localError
		switch {
		case errors.As(err, &local):
			return err
		case errors.Is(err, natsbus.ErrNoDirect):
			return fmt.Errorf("mirror: %w", err)
		case err != nil && ctx.Err() == nil:
			if s := err.Error(); s != down {
				m.log.Warn("mirror: the stream or the bridge failed; retrying", "err", err)
				down = s
			}
			restart = true
			// Until the next poll or, sooner, a hint: the bridge
			// publishing again once NATS is back (a plain sleep of
			// Poll held the backlog up to 2 s past that).
			r.wait(ctx, m.cfg.Poll, true)
			continue
		case err == nil && down != "":
			m.log.Info("mirror: the stream and the bridge answer again")
			down = ""
		}
		restart = false
		if !more {
			r.wait(ctx, m.cfg.Poll, found)
		}
	}
	return nil
}

// aside returns err when it is local (the mirror stops); the bridge's
// failure of a side task (the keyring, kills) is logged when it changes
// and does not hold the messages up.
func (m *Mirror) aside(what string, err error) error {
	var local *localError
	if errors.As(err, &local) {
		return err
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	m.mu.Lock()
	if m.asideErr == nil {
		m.asideErr = map[string]string{}
	}
	was := m.asideErr[what]
	m.asideErr[what] = msg
	m.mu.Unlock()
	switch {
	case msg != "" && msg != was:
		m.log.Warn("mirror: "+what+" through the bridge failed; retrying each poll", "err", err)
	case msg == "" && was != "":
		m.log.Info("mirror: " + what + " through the bridge work again")
	}
	return nil
}

// localError is a failure of the local disk: the mirror stops.
type localError struct{ err error }

func (e *localError) Error() string { return "mirror: " + e.err.Error() }
func (e *localError) Unwrap() error { return e.err }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// inOnce is one turn of the mirror in: the keyring and kills (by poll),
// the stream's gaps, and a read of the agent's channels from the
// position through the stream's last message (at most mirrorWindow
// sequences: more then reports that there is more to read at once).
// found reports that the read had messages. After a restart (the first
// turn, or one after a failure), a mirror without a position or with
// channels it did not have catches up from the files first.
func (m *Mirror) inOnce(ctx context.Context, r *streamReader, tick int, restart bool) (more, found bool, err error) {
	if !m.cfg.LocalKeys && tick%keysEvery == 0 {
		if err := m.aside("keys", m.syncKeys(ctx)); err != nil {
			return false, false, err
		}
	}
	info, err := r.info(ctx)
	if err != nil {
		return false, false, err
	}
	m.mu.Lock()
	seq, since, had := m.st.StreamSeq, m.st.StreamTime, m.st.Channels
	m.mu.Unlock()
	fresh := restart && (seq == 0 || !slices.Equal(had, m.cfg.Channels))
	if restart && seq == 0 {
		// A first start reads the stream from a little before now, and
		// what came before from the files.
		m.start = m.cfg.Now().Add(-followMargin)
	}
	if err := m.checkGap(ctx, info.State.FirstSeq, seq, since, fresh); err != nil {
		return false, false, err
	}
	if err := m.aside("kills", m.syncKills(ctx)); err != nil {
		return false, false, err
	}
	m.mu.Lock()
	from, since := m.st.StreamSeq, m.st.StreamTime
	m.mu.Unlock()
	upTo := info.State.LastSeq
	if from > 0 && upTo > from+mirrorWindow {
		upTo, more = from+mirrorWindow, true
	}
	if upTo <= from {
		m.caughtUp()
		return false, false, nil
	}
	readFrom, start := from+1, m.start
	if from > 0 && info.Config.Replicas > 1 && !since.IsZero() {
		// A follower may answer a moment behind the leader, whose last
		// sequence upTo is: read again from a little before the last
		// message had, so what it lacked comes at the next read.
		readFrom, start = 0, since.Add(-followerLag)
	}
	last, lastTime, found, err := m.readWindow(ctx, r, readFrom, start, upTo)
	if err != nil {
		return false, found, err
	}
	if from > 0 {
		// The stream still holds where the read started: nothing was
		// removed between the check above and the read.
		after, err := r.info(ctx)
		if err != nil {
			return false, found, err
		}
		if err := m.checkGap(ctx, after.State.FirstSeq, from, since, false); err != nil {
			return false, found, err
		}
	}
	if err := m.advance(upTo, last, lastTime, info); err != nil {
		return false, found, err
	}
	if !more {
		m.caughtUp()
	}
	return more, found, nil
}

// readWindow writes the stream's messages of the mirror's channels from
// sequence readFrom (0: from those stored at or after start) through
// upTo into the mirror's tree, and makes their names durable. It returns
// the last sequence read and its time, and whether there were messages.
// A message the mirror refuses is logged and skipped; one it cannot
// write is a *localError.
func (m *Mirror) readWindow(ctx context.Context, r *streamReader, readFrom uint64, start time.Time, upTo uint64) (last uint64, lastTime time.Time, found bool, err error) {
	dirs := dirBatch{root: m.root}
	defer dirs.close()
	for _, ch := range m.cfg.Channels {
		_, err := r.read(ctx, ch, readFrom, start, upTo, func(sm *natsbus.StoredMsg) error {
			found = true
			dm, err := natsbus.Decode(sm.Subject, sm.Header, sm.Data)
			if err == nil {
				_, err = m.put(&dirs, dm.SessionID, dm.Key(), sm.Data)
				if err != nil && !errors.Is(err, channel.ErrMalformed) && !errors.Is(err, tree.ErrBadName) && !errors.Is(err, channel.ErrNotMessageName) {
					// The position stays before it: read again after
					// the restart.
					return &localError{fmt.Errorf("write %s: %w", dm.Key(), err)}
				}
			}
			if err != nil {
				// Never written: the files on the mount stay what the
				// watchers there read.
				m.log.Warn("mirror: refused a stream message", "subject", sm.Subject, "seq", sm.Seq, "err", err)
			}
			if sm.Seq > last {
				last, lastTime = sm.Seq, sm.Time
			}
			return nil
		})
		if err != nil {
			// What was written is kept, the position stays: the next
			// read gives it again, and the file there is that copy.
			return last, lastTime, found, fmt.Errorf("read %s: %w", ch, err)
		}
	}
	if err := dirs.sync(); err != nil {
		return last, lastTime, found, &localError{err}
	}
	return last, lastTime, found, nil
}

// advance moves the position to upTo and saves it, with the time of the
// last message read (or, at the stream's end, of the stream's last).
func (m *Mirror) advance(upTo, last uint64, lastTime time.Time, info *natsbus.StreamInfo) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if upTo <= m.st.StreamSeq {
		return nil
	}
	m.st.StreamSeq = upTo
	switch {
	case last > 0:
		m.st.StreamTime = lastTime.UTC()
	case upTo == info.State.LastSeq:
		m.st.StreamTime = info.State.LastTime.UTC()
	}
	if err := m.save(); err != nil {
		return &localError{err}
	}
	return nil
}

// caughtUp closes CaughtUp once the keyring is copied too.
func (m *Mirror) caughtUp() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keysOK {
		m.once.Do(func() { close(m.caught) })
	}
}

// checkGap catches up from the files through the bridge when the stream
// no longer holds the messages after seq (its first message, first, is
// past seq+1; said once in the log, with since, the stream time of the
// mirror's last message), or when fresh (a first start, or a channel the
// mirror did not have). The position then moves past what the stream
// lost.
func (m *Mirror) checkGap(ctx context.Context, first, seq uint64, since time.Time, fresh bool) error {
	gap := seq > 0 && seq+1 < first
	switch {
	case gap:
		m.log.Warn(fmt.Sprintf("mirror: the stream no longer holds messages since %s (its retention is a limit; the files have none); caught up from the files through the bridge",
			since.Format(time.RFC3339)), "stream_first", first, "mirror_had", seq)
	case fresh:
		m.log.Info("mirror: new channels or a first start; caught up from the files through the bridge", "channels", m.cfg.Channels)
	default:
		return nil
	}
	for _, ch := range m.cfg.Channels {
		if err := m.catchUp(ctx, ch, since); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// Past what the stream lost (a first start keeps no position: it
	// reads the stream from its start time, until its first read).
	if gap && first-1 > m.st.StreamSeq {
		m.st.StreamSeq = first - 1
	}
	m.st.Channels = m.cfg.Channels
	if err := m.save(); err != nil {
		return &localError{err}
	}
	return nil
}

// catchUp pages ch from the files on the mount into the mirror: from
// outMargin before since, the stream's time of the last message the
// mirror had (zero: after the newest message in the mirror; none: the
// newest page only). Not the mirror's newest file when since is known:
// that may be the agent's own reply, newer than what was missed.
func (m *Mirror) catchUp(ctx context.Context, ch string, since time.Time) error {
	after, limit := "", bridge.DefaultReadLimit
	if !since.IsZero() {
		after, limit = channel.NewID(m.cfg.Agent, since.Add(-outMargin), "0000"), bridge.MaxReadLimit
	} else {
		newest, _, _, err := channel.Newest(m.root, ch, 1, nil, nil)
		if err != nil {
			return &localError{fmt.Errorf("catch up %s: %w", ch, err)}
		}
		if len(newest) > 0 {
			after, limit = newest[0].Key(), bridge.MaxReadLimit
		}
	}
	n := 0
	dirs := dirBatch{root: m.root}
	defer dirs.close()
	for ctx.Err() == nil {
		p, err := m.cfg.Client.Read(ctx, ch, after, limit)
		if err != nil {
			return err
		}
		for _, msg := range p.Messages {
			data, err := msg.Encode()
			if err != nil {
				continue
			}
			wrote, err := m.put(&dirs, ch, msg.Key(), data)
			if err != nil && !errors.Is(err, channel.ErrMalformed) && !errors.Is(err, tree.ErrBadName) {
				return &localError{fmt.Errorf("catch up %s: %w", ch, err)}
			}
			if wrote {
				n++
			}
		}
		for _, o := range p.Omitted {
			m.log.Warn("mirror: a message too big for the bridge is not mirrored; read it on the mount", "channel", ch, "msg", o.ID)
		}
		if !p.More || p.Last == "" || after == "" {
			break
		}
		after, limit = p.Last, bridge.MaxReadLimit
	}
	if err := ctx.Err(); err != nil {
		return err // cut short: the position must not move past it
	}
	if err := dirs.sync(); err != nil {
		return &localError{fmt.Errorf("catch up %s: %w", ch, err)}
	}
	if n > 0 {
		m.log.Info("mirror: caught up from the files", "channel", ch, "messages", n)
	}
	return nil
}
