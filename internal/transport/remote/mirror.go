package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
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
