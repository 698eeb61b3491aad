package natsbus

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Defaults of StreamConfig.
const (
	DefaultMaxAge     = 30 * 24 * time.Hour
	DefaultMaxBytes   = 1 << 30
	DefaultDuplicates = 2 * time.Minute
)

// StreamConfig is what InitStream sets. Zero values take the defaults.
type StreamConfig struct {
	MaxAge     time.Duration // messages older than this are removed; default 30 days
	MaxBytes   int64         // the oldest messages go past this size; default 1 GiB, <0 no limit
	Duplicates time.Duration // the dedupe window; default 2 minutes
	Replicas   int           // 1 to MaxReplicas; 0: 1 for a new stream, an existing stream keeps its own
}

// InitStream creates the stream CHAT over collab.chat.> in file storage, or
// updates an existing one to the config, keeping its other settings. Either
// way the stream allows direct gets (allow_direct), which is how remote
// hosts read it ([DirectBatch]) without a consumer of their own. It
// reports whether it created the stream. From then on this Bus publishes to
// it.
//
// Replicas other than 0 set the stream's replica count, also of an
// existing stream: on a cluster, JetStream adds the new copies (the
// followers catch up from the leader; [Bus.StreamStatus] shows them) or
// removes some. More than one replica on a server that is not in a cluster
// is refused with ErrNotClustered, and more than the cluster's JetStream
// servers up by the server.
func (b *Bus) InitStream(ctx context.Context, c StreamConfig) (created bool, err error) {
	if c.MaxAge <= 0 {
		c.MaxAge = DefaultMaxAge
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxBytes < 0 {
		c.MaxBytes = -1
	}
	if c.Duplicates <= 0 {
		c.Duplicates = DefaultDuplicates
	}
	if err := CheckReplicas(c.Replicas); err != nil {
		return false, err
	}
	if err := b.checkClustered(c.Replicas); err != nil {
		return false, err
	}
	if c.Duplicates > c.MaxAge {
		return false, fmt.Errorf("natsbus: the duplicate window %v is longer than the maximum age %v", c.Duplicates, c.MaxAge)
	}
	cfg := jetstream.StreamConfig{
		Name:      StreamName,
		Storage:   jetstream.FileStorage,
		Retention: jetstream.LimitsPolicy,
		Discard:   jetstream.DiscardOld,
		Replicas:  max(c.Replicas, 1),
	}
	s, err := b.js.Stream(ctx, StreamName)
	switch {
	case err == nil:
		cfg = s.CachedInfo().Config
		if c.Replicas > 0 {
			cfg.Replicas = c.Replicas
		}
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return false, streamError("stream "+StreamName, err)
	}
	cfg.Subjects = []string{ChatPrefix + ">"}
	cfg.MaxAge = c.MaxAge
	cfg.MaxBytes = c.MaxBytes
	cfg.Duplicates = c.Duplicates
	cfg.AllowDirect = true
	if err == nil {
		_, err = b.js.UpdateStream(ctx, cfg)
	} else {
		created = true
		_, err = b.js.CreateStream(ctx, cfg)
	}
	if err != nil {
		return false, streamError("init stream "+StreamName, replicasError(cfg.Replicas, err))
	}
	b.detect(ctx)
	return created, nil
}

// StreamSet is what the stream holds for one channel.
type StreamSet struct {
	IDs map[string]struct{}
	// From is the time from which the stream can be compared with the
	// files: the time asked for or, if the stream has dropped its oldest
	// messages (by age or size), the time of the oldest one it kept.
	From time.Time
	// Duplicates lists ids stored more than once: copies published outside
	// the duplicate window.
	Duplicates []string
}

// parityMargin is how far before the time asked for StreamIDs starts
// reading, for messages stored later than their id's time (clock skew
// between the writer and the server, slow publishes).
const parityMargin = 10 * time.Minute

// StreamIDs returns the ids of the channel's messages in the stream whose
// id's time is at or after since (zero: all), read with an ephemeral
// consumer. It fails if the stream does not exist.
func (b *Bus) StreamIDs(ctx context.Context, ch string, since time.Time) (StreamSet, error) {
	if err := tree.CheckName("channel", ch); err != nil {
		return StreamSet{}, err
	}
	s, err := b.js.Stream(ctx, StreamName)
	if err != nil {
		return StreamSet{}, streamError("stream "+StreamName, err)
	}
	set := StreamSet{IDs: make(map[string]struct{}), From: since.UTC()}
	// Messages were removed from the front (aged out, or over the size
	// limit): compare only from the oldest one kept.
	if st := s.CachedInfo().State; st.FirstSeq > 1 && st.FirstTime.After(set.From) {
		set.From = st.FirstTime.UTC()
	}
	cfg := jetstream.ConsumerConfig{
		FilterSubject:     ChatSubject(ch),
		AckPolicy:         jetstream.AckNonePolicy,
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		MemoryStorage:     true,
		InactiveThreshold: time.Minute,
	}
	if !since.IsZero() {
		start := since.Add(-parityMargin)
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &start
	}
	cons, err := s.CreateConsumer(ctx, cfg)
	if err != nil {
		return StreamSet{}, fmt.Errorf("natsbus: read stream %s: %w", StreamName, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		defer cancel()
		_ = s.DeleteConsumer(dctx, cons.CachedInfo().Name)
	}()
	want := cons.CachedInfo().NumPending
	for got := uint64(0); got < want; {
		if err := ctx.Err(); err != nil {
			return StreamSet{}, err
		}
		batch, err := cons.Fetch(int(min(want-got, 256)), jetstream.FetchMaxWait(b.timeout))
		if err != nil {
			return StreamSet{}, fmt.Errorf("natsbus: read stream %s: %w", StreamName, err)
		}
		n, last := 0, false
		for msg := range batch.Messages() {
			n++
			got++
			b.collect(&set, msg)
			if md, err := msg.Metadata(); err == nil && md.NumPending == 0 {
				last = true
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return StreamSet{}, fmt.Errorf("natsbus: read stream %s: %w", StreamName, err)
		}
		if last || n == 0 {
			break // the rest was removed while we read
		}
	}
	slices.Sort(set.Duplicates)
	return set, nil
}

// collect adds a stored message's id to set if its time is in range.
func (b *Bus) collect(set *StreamSet, msg jetstream.Msg) {
	id := msg.Headers().Get(MsgIDHeader)
	if id == "" {
		if m, err := channel.Decode(msg.Data(), "", ""); err == nil {
			id = m.ID
		}
	}
	n, err := channel.ParseID(id)
	if err != nil {
		b.log.Warn("stream message without a valid id", keySubject, msg.Subject(), keyMsg, id)
		return
	}
	if n.Time.Before(set.From.Truncate(time.Second)) {
		return
	}
	if _, dup := set.IDs[id]; dup {
		set.Duplicates = append(set.Duplicates, id)
		return
	}
	set.IDs[id] = struct{}{}
}

// FileIDs returns the ids of the message files in the channel's folder
// whose id's time is at or after from (zero: all). A missing folder has
// none.
func FileIDs(root tree.Root, ch string, from time.Time) (map[string]struct{}, error) {
	if err := tree.CheckName("channel", ch); err != nil {
		return nil, err
	}
	ids := make(map[string]struct{})
	d, err := safedir.Open(root.Channel(ch))
	if errors.Is(err, fs.ErrNotExist) {
		return ids, nil
	}
	if err != nil {
		return nil, fmt.Errorf("natsbus: open channel %s: %w", ch, err)
	}
	defer d.Close()
	entries, err := d.ReadDir()
	if err != nil {
		return nil, fmt.Errorf("natsbus: list channel %s: %w", ch, err)
	}
	from = from.Truncate(time.Second)
	for _, e := range entries {
		n, err := channel.ParseName(e.Name())
		if err != nil || !e.Type().IsRegular() || n.Time.Before(from) {
			continue
		}
		ids[strings.TrimSuffix(e.Name(), ".json")] = struct{}{}
	}
	return ids, nil
}

// Parity compares the ids in the files with those in the stream, both
// taken from the same time on, and returns the ids missing on each side,
// sorted.
func Parity(files, stream map[string]struct{}) (missingInStream, missingInFiles []string) {
	for id := range files {
		if _, ok := stream[id]; !ok {
			missingInStream = append(missingInStream, id)
		}
	}
	for id := range stream {
		if _, ok := files[id]; !ok {
			missingInFiles = append(missingInFiles, id)
		}
	}
	slices.Sort(missingInStream)
	slices.Sort(missingInFiles)
	return missingInStream, missingInFiles
}
