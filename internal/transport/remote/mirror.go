package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/agentfiles"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// DefaultMirrorPoll is the mirror's poll interval when MirrorConfig.Poll
// is 0.
const DefaultMirrorPoll = 2 * time.Second

// DrainBudget bounds the drain of the outbox when a Mirror's Run ends.
const DrainBudget = 10 * time.Second

// MirrorStateFile is the mirror's cursor file, next to the mirror tree
// (filepath.Dir(Dir)).
const MirrorStateFile = "mirror-state.json"

// Mirror tuning.
const (
	// mirrorWindow is the most stream sequences one read of the mirror
	// covers: the position is saved after each.
	mirrorWindow = 16 * streamBatch
	// outMargin is how far before the newest of its agent's messages the
	// mirror out looks again for a file the watcher published late.
	outMargin = time.Minute
	// followerLag is how far before the last message it had the mirror
	// reads a replicated stream again (a follower answering a direct get
	// may be that far behind the leader).
	followerLag = 5 * time.Second
	// keysEvery is how many polls pass between two reads of the keyring.
	keysEvery = 5
)

// MirrorConfig makes a Mirror.
type MirrorConfig struct {
	Client   *Client         // the agent's client: its Agent, outbox and reads
	Agent    string          // "" = Client.Agent()
	Channels []string        // the channels the agent follows
	Dir      string          // the mirror tree's root, usually STATE/tree
	Stream   *natsbus.Reader // nil = the Client's (Dial sets it)
	Poll     time.Duration   // 0 = DefaultMirrorPoll
	// LocalKeys: the watcher verifies with a local keyring (--keyring),
	// so Dir/keys is not mirrored; Verifier must then be set.
	LocalKeys bool
	// Verifier checks kill requests before they are written; nil = one
	// over the mirrored keyring Dir/keys.
	Verifier *signing.Verifier
	Logger   *slog.Logger     // nil = the Client's
	Now      func() time.Time // nil = time.Now
}

// Mirror keeps a local mirror tree of one agent's view of the shared tree,
// so that the ordinary watcher runs on a host without the mount (`collab
// watch --remote`: the watcher's Root is [Mirror.Root]). Run it once.
//
// Mirror in. The stream is read with direct gets (streamReader: by
// sequence, in batches, one channel collab.chat.C at a time, for each of
// the agent's channels), without a consumer: the server holds nothing of
// the agent's, and the permissions of deploy/nats/accounts.conf give a
// remote agent no consumer API at all. Each message's exact bytes are
// published as Dir/channels/C/ID.json (ID the stream's Nats-Msg-Id, the
// file's id on the mount) with a no-replace write, an existing file being
// a copy already there. The position is the mirror's own: the stream
// sequence through which every message of its channels is written
// (StreamSeq in STATE/mirror-state.json). Each turn reads the stream's
// info (its first and last sequence), then every channel from the
// message after the position through the last one (at most mirrorWindow
// sequences a turn), and saves the position after the read is on disk
// (each file fsynced as it is written, each folder once per turn), so a
// crash at any point reads again at worst. The reads are polls, every
// Poll and at once when a core NATS subscription to the channels'
// subjects sees a message published (a hint: polling is the truth). On
// a replicated stream, whose followers may answer a direct get a moment
// behind the leader, each read starts followerLag before the stream time
// of the last message had (untested: the tests run one server). A
// stream that does not allow direct gets stops the mirror with an error
// that names the fix (collab nats init). A message that does not decode
// as a message of C under a valid id is never written (and logged). The
// bytes are those the bridge published: a collab-written file's own
// bytes; a foreign writer's file as package channel decodes and encodes
// it.
//
// Catch-up. A first start (no position), a channel added since the last
// run, and a mirror that missed messages the stream no longer holds (the stream's
// retention is a configured limit: the files have none; detected when the
// stream's first sequence is past the last one the mirror had, kept in
// STATE/mirror-state.json, before a read and again after it) page the channel from the files on the mount
// with the bridge's read op, from a minute before the stream time of the
// last message the mirror had (unknown: after the newest message in the
// mirror; none: the newest page only). The second case is logged once as a warning:
// "the stream no longer holds messages since T ... caught up from the
// files through the bridge".
//
// Keys and kills. Dir/keys is the mount's keyring (bridge op keys, every
// fifth poll; not with LocalKeys): the remote host trusts it because its
// NATS credentials trust the bridge. Each poll, the jobs in
// Dir/state/AGENT/jobs without a kill file are asked about (bridge op
// kills: the file on the mount is the truth, whoever wrote it, and a
// request published on NATS while this host was away would be missed); a
// kill request is written with jobs.WriteKill only when its requester's
// signature is Verified.
//
// Mirror out. The agent's messages that the watcher writes in
// Dir/channels/*/ (names with the agent's name, from the agent, not
// mirrored in) are added to the Client's outbox, oldest first, and the
// outbox flushed: never dropped, in order, resent until the bridge
// answers (a post is idempotent). Each channel's cursor (the ids queued
// since a floor a minute before the newest) is in STATE/mirror-state.json,
// written atomically after the entries are in the outbox, so a restart
// queues again at worst (a copy on the wire, one file on the mount). The
// presence file is sent when it changed, the latest only. Seen files,
// claim generations and reply tokens are not the mirror's: the watcher's
// claims opener (Client.ClaimDirs) makes them on the mount. The channel and presence folders
// are watched with fsnotify, and everything is polled every Poll.
//
// [Mirror.CaughtUp] is closed once a read first reaches the stream's last
// message (after any catch-up from the files) and the keyring copy is in
// place: the watcher may start then.
//
// When Run's context ends, the outbox is drained within [DrainBudget].
type Mirror struct {
	cfg  MirrorConfig
	root tree.Root
	log  *slog.Logger

	mu       sync.Mutex
	st       mirrorState
	fromIn   map[string]struct{} // ids of the agent's messages the mirror in wrote
	warned   map[string]bool     // kill files refused, said once
	lastPre  []byte              // the presence file last sent
	queued   bool                // the outbox is waiting for the bridge, said once
	wake     chan struct{}       // the mirror out has something to look at
	caught   chan struct{}       // closed by the first catch-up (CaughtUp)
	asideErr map[string]string   // the last failure of each side task
	keysOK   bool                // the keyring was copied once
	once     sync.Once
	start    time.Time // without a position, the stream is read from here (runIn's)
}

// mirrorState is the file MirrorStateFile.
type mirrorState struct {
	// StreamSeq is the stream sequence up to which the mirror has every
	// message of its channels the stream held; StreamTime the stream's
	// time of the last one it got; Channels the channels it had then (a
	// channel not among them has its history in the files).
	StreamSeq  uint64    `json:"stream_seq"`
	StreamTime time.Time `json:"stream_time"`
	Channels   []string  `json:"channels,omitempty"`
	// Out is, per channel, what the mirror out has queued: Sent holds the
	// ids queued whose time is at or after Floor.
	Out map[string]*outCursor `json:"out"`
}

type outCursor struct {
	Floor time.Time `json:"floor"`
	Sent  []string  `json:"sent"`
}

// NewMirror returns a Mirror; Run starts it.
func NewMirror(c MirrorConfig) (*Mirror, error) {
	if c.Client == nil {
		return nil, errors.New("remote: a mirror needs a client")
	}
	if c.Agent == "" {
		c.Agent = c.Client.Agent()
	}
	if c.Agent != c.Client.Agent() {
		return nil, fmt.Errorf("remote: mirror of %s with %s's client", c.Agent, c.Client.Agent())
	}
	for _, ch := range c.Channels {
		if err := tree.CheckName("channel", ch); err != nil {
			return nil, fmt.Errorf("remote: mirror: %w", err)
		}
	}
	if c.Dir == "" {
		return nil, errors.New("remote: a mirror needs its folder")
	}
	if len(c.Channels) == 0 {
		return nil, errors.New("remote: a mirror needs the agent's channels")
	}
	if c.Stream == nil {
		c.Stream = c.Client.cfg.Stream
	}
	if c.Poll <= 0 {
		c.Poll = DefaultMirrorPoll
	}
	if c.Logger == nil {
		c.Logger = c.Client.cfg.Logger
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.LocalKeys && c.Verifier == nil {
		return nil, errors.New("remote: a mirror with a local keyring needs its verifier")
	}
	c.Dir = filepath.Clean(c.Dir)
	root := tree.Root(c.Dir)
	if c.Verifier == nil {
		c.Verifier = signing.NewVerifier(keyring.Open(root.Keys()))
	}
	c.Channels = slices.Clone(c.Channels)
	slices.Sort(c.Channels)
	c.Channels = slices.Compact(c.Channels)
	return &Mirror{
		cfg: c, root: root, log: c.Logger,
		fromIn: map[string]struct{}{}, warned: map[string]bool{},
		wake: make(chan struct{}, 1), caught: make(chan struct{}), keysOK: c.LocalKeys,
	}, nil
}

// Root returns the mirror tree, the Root a watcher works on.
func (m *Mirror) Root() tree.Root { return m.root }

// statePath is the cursor file.
func (m *Mirror) statePath() string { return filepath.Join(filepath.Dir(m.cfg.Dir), MirrorStateFile) }

// Run mirrors in and out until ctx ends, then drains the outbox within
// DrainBudget. It returns nil when ctx ended, else the error that stopped
// it (the mirror tree or its state cannot be written).
func (m *Mirror) Run(ctx context.Context) error {
	if m.cfg.Stream == nil {
		return errors.New("mirror: no JetStream connection (a client made offline, or without Dial)")
	}
	for _, dir := range []string{m.root.Channels(), m.root.Presence(), m.root.Keys(), m.root.Jobs(m.cfg.Agent)} {
		if err := safedir.MkdirAll(dir); err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
	}
	for _, ch := range m.cfg.Channels {
		if err := safedir.MkdirAll(m.root.Channel(ch)); err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
	}
	if err := m.load(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- m.runIn(ctx) }()
	go func() { errs <- m.runOut(ctx) }()
	var err error
	for range 2 {
		if e := <-errs; e != nil && err == nil {
			// Said now: the drain below may take DrainBudget.
			m.log.Error("mirror: stopping", "err", e)
			err = e
			cancel()
		}
	}
	dctx, dcancel := context.WithTimeout(context.Background(), DrainBudget)
	defer dcancel()
	if derr := m.outOnce(dctx); derr != nil && err == nil {
		err = derr
	}
	return err
}

// load reads the state file; none is a fresh mirror, whose mirror out
// starts from now (less outMargin).
func (m *Mirror) load() error {
	d, err := safedir.Open(filepath.Dir(m.cfg.Dir))
	if err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	defer d.Close()
	data, _, err := d.ReadFile(MirrorStateFile, 16<<20)
	m.st = mirrorState{Out: map[string]*outCursor{}}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		floor := m.cfg.Now().Add(-outMargin).UTC()
		for _, ch := range m.cfg.Channels {
			m.st.Out[ch] = &outCursor{Floor: floor}
		}
		return m.save()
	case err != nil:
		return fmt.Errorf("mirror: state: %w", err)
	}
	if err := json.Unmarshal(data, &m.st); err != nil {
		return fmt.Errorf("mirror: state %s: %w", m.statePath(), err)
	}
	if m.st.Out == nil {
		m.st.Out = map[string]*outCursor{}
	}
	return nil
}

// CaughtUp is closed once the mirror has caught up the first time: it
// read through the stream's last message, the files were read where the
// stream could not answer, and the keyring copy is in Dir/keys.
func (m *Mirror) CaughtUp() <-chan struct{} { return m.caught }

// save writes the state atomically; the caller holds m.mu or is alone.
func (m *Mirror) save() error {
	data, err := json.Marshal(m.st)
	if err != nil {
		return fmt.Errorf("mirror: state: %w", err)
	}
	d, err := safedir.Open(filepath.Dir(m.cfg.Dir))
	if err != nil {
		return fmt.Errorf("mirror: state: %w", err)
	}
	defer d.Close()
	if err := d.Replace(MirrorStateFile, data, 0o600); err != nil {
		return fmt.Errorf("mirror: state: %w", err)
	}
	return nil
}

// ---- Mirror in ----

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
			sleep(ctx, m.cfg.Poll)
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
	var last uint64
	var lastTime time.Time
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
			return false, found, fmt.Errorf("read %s: %w", ch, err)
		}
	}
	if err := dirs.sync(); err != nil {
		return false, found, &localError{err}
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
	m.mu.Lock()
	if upTo > m.st.StreamSeq {
		m.st.StreamSeq = upTo
		switch {
		case last > 0:
			m.st.StreamTime = lastTime.UTC()
		case upTo == info.State.LastSeq:
			m.st.StreamTime = info.State.LastTime.UTC()
		}
		if err := m.save(); err != nil {
			m.mu.Unlock()
			return false, found, &localError{err}
		}
	}
	m.mu.Unlock()
	if !more {
		m.caughtUp()
	}
	return more, found, nil
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

// ---- Mirror out ----

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
