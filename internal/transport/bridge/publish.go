package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// Stream is what the publisher needs of natsbus's Bus.
type Stream interface {
	// PublishMessage publishes m; nil means the stream acked it (when
	// JetStream reports true).
	PublishMessage(ctx context.Context, m *channel.Message) error
	// JetStream reports whether publishes go to the stream.
	JetStream() bool
}

// Defaults of [Publisher].
const (
	DefaultBackfill = 24 * time.Hour
	DefaultPoll     = time.Second
)

// Publisher publishes every message that lands in any channel of Root to
// the stream, including those written by writers that never publish. It
// keeps a cursor per channel in StateFile, written (atomically) only when
// every message before it was acked by the stream, so a publisher killed
// at any point publishes again (the stream drops a copy within its
// duplicate window, receivers dedupe by id) and never skips. A channel
// without a cursor (the first start, or a channel that appeared since) is
// published from Backfill ago. A message the server refuses as too big is
// logged and left to the read op. Channels are polled every Poll, and at
// once when fsnotify reports a file made on this host.
type Publisher struct {
	Root      tree.Root
	Stream    Stream
	StateFile string        // default ROOT/bridges/HOST.json: see [StatePath]
	Backfill  time.Duration // default DefaultBackfill
	Poll      time.Duration // default DefaultPoll
	Logger    *slog.Logger
	Now       func() time.Time

	readers map[string]*channel.Reader
	pending map[string][]channel.Message // returned by a reader, not acked yet
	dirty   bool
	waiting bool // for the stream, said once
}

// StatePath returns the publisher's state file of host under root.
func StatePath(root tree.Root, host string) string {
	b := []byte(host)
	for i, c := range b {
		if !tree.NameByte(c) {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		b = []byte("bridge")
	}
	return filepath.Join(root.Bridges(), string(b)+".json")
}

// state is the file's content.
type state struct {
	Channels map[string]channel.Cursor `json:"channels"`
}

func (p *Publisher) defaults() {
	if p.Backfill <= 0 {
		p.Backfill = DefaultBackfill
	}
	if p.Poll <= 0 {
		p.Poll = DefaultPoll
	}
	if p.Logger == nil {
		p.Logger = slog.Default()
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	p.readers = map[string]*channel.Reader{}
	p.pending = map[string][]channel.Message{}
}

// Run publishes until ctx is done, then saves the state and returns nil.
// Only a state file that cannot be read is an error; failures of the tree
// or the stream are logged and retried at the next poll.
func (p *Publisher) Run(ctx context.Context) error {
	p.defaults()
	st, err := p.load()
	if err != nil {
		return err
	}
	t := time.NewTicker(p.Poll)
	defer t.Stop()
	// Local writes are hinted by fsnotify (a poll at once); writes of
	// other NFS hosts are found by the poll, which is the truth.
	wake := make(chan struct{}, 1)
	var watched []string
	stopWatch := func() {}
	defer func() { stopWatch() }()
	for {
		p.step(ctx, st)
		if chans := slices.Sorted(maps.Keys(p.readers)); !slices.Equal(chans, watched) {
			stopWatch()
			stopWatch, watched = p.watch(ctx, chans, wake), chans
		}
		select {
		case <-ctx.Done():
			p.save()
			return nil
		case <-t.C:
		case <-wake:
		}
	}
}

// step is one poll: new channels are picked up, what is pending is
// published, then (if nothing is left pending) each channel is scanned and
// published, and the state saved when it moved.
func (p *Publisher) step(ctx context.Context, st state) {
	if p.readers == nil {
		p.defaults()
	}
	p.discover(st)
	if !p.Stream.JetStream() {
		if !p.waiting {
			p.Logger.Warn("bridge: no stream " + natsbus.StreamName + " (collab nats init creates it); publishing waits for it")
		}
		p.waiting = true
		return
	}
	p.waiting = false
	for ch, r := range p.readers {
		if ctx.Err() != nil {
			return
		}
		if !p.flush(ctx, ch) {
			continue
		}
		msgs, skips, err := r.Scan()
		for _, s := range skips {
			p.Logger.Warn("bridge: skipped a file", "channel", ch, "skip", s.String())
		}
		if err != nil {
			p.Logger.Warn("bridge: scan failed", "channel", ch, "err", err)
			continue
		}
		if len(msgs) > 0 {
			p.pending[ch] = msgs
			p.flush(ctx, ch)
		}
	}
	if p.dirty {
		p.save()
	}
}

// watch sends to wake whenever fsnotify sees a file made in one of
// chans, until the returned stop is called.
func (p *Publisher) watch(ctx context.Context, chans []string, wake chan struct{}) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := fswake.Channels{Root: p.Root}.Watch(ctx, chans, func(string, string) {
			select {
			case wake <- struct{}{}:
			default:
			}
		})
		if err != nil {
			p.Logger.Warn("bridge: no fsnotify hints; polling only", "err", err)
		}
	}()
	return func() { cancel(); <-done }
}

// flush publishes ch's pending messages in order, and reports whether
// none is left.
func (p *Publisher) flush(ctx context.Context, ch string) bool {
	msgs := p.pending[ch]
	for len(msgs) > 0 {
		err := p.Stream.PublishMessage(ctx, &msgs[0])
		if errors.Is(err, natsbus.ErrMaxPayload) {
			p.Logger.Warn("bridge: message too big for the stream; remote readers find it with the read op", "channel", ch, "msg", msgs[0].ID)
			err = nil
		}
		if err != nil {
			telemetry.Default().NATSError(ctx, "publish")
			p.pending[ch] = msgs // natsbus logged it
			return false
		}
		msgs = msgs[1:]
	}
	delete(p.pending, ch)
	p.dirty = true
	return true
}

// discover adds a reader for every channel without one.
func (p *Publisher) discover(st state) {
	d, err := safedir.Open(p.Root.Channels())
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			p.Logger.Warn("bridge: list channels failed", "err", err)
		}
		return
	}
	defer d.Close()
	entries, err := d.ReadDir()
	if err != nil {
		p.Logger.Warn("bridge: list channels failed", "err", err)
		return
	}
	for _, e := range entries {
		ch := e.Name()
		if _, ok := p.readers[ch]; ok || !e.IsDir() || tree.CheckName("channel", ch) != nil {
			continue
		}
		cur, ok := st.Channels[ch]
		if !ok {
			cur = channel.Cursor{Floor: p.Now().Add(-p.Backfill).UTC()}
		}
		r, err := channel.NewReader(p.Root, ch, cur, channel.ReaderOptions{Now: p.Now})
		if err != nil {
			p.Logger.Warn("bridge: open channel failed", "channel", ch, "err", err)
			continue
		}
		p.readers[ch] = r
		p.Logger.Info("bridge: publishing channel", "channel", ch, "from", cur.Floor)
	}
}

func (p *Publisher) path() string {
	if p.StateFile != "" {
		return p.StateFile
	}
	return StatePath(p.Root, "bridge")
}

func (p *Publisher) load() (state, error) {
	st := state{Channels: map[string]channel.Cursor{}}
	data, err := readFile(p.path())
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("bridge: read state: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("bridge: state %s: %w", p.path(), err)
	}
	if st.Channels == nil {
		st.Channels = map[string]channel.Cursor{}
	}
	return st, nil
}

// save writes every channel's cursor whose messages are all acked; a
// channel with pending messages keeps the cursor it had in the file.
func (p *Publisher) save() {
	old, err := p.load()
	if err != nil {
		p.Logger.Warn("bridge: state not saved", "err", err)
		return
	}
	for ch, r := range p.readers {
		if len(p.pending[ch]) == 0 {
			old.Channels[ch] = r.Cursor()
		}
	}
	data, _ := json.Marshal(old)
	if err := writeFile(p.path(), data); err != nil {
		p.Logger.Warn("bridge: state not saved", "err", err)
		return
	}
	p.dirty = false
}

// maxState bounds the state file read.
const maxState = 16 << 20

func readFile(path string) ([]byte, error) {
	d, err := safedir.Open(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	data, _, err := d.ReadFile(filepath.Base(path), maxState)
	return data, err
}

func writeFile(path string, data []byte) error {
	d, err := safedir.Create(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Replace(filepath.Base(path), data, 0o644)
}
