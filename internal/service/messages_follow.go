package service

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// DefaultFollowPoll is how often Follow looks at a channel when the
// request gives no Poll.
const DefaultFollowPoll = time.Second

// FollowRequest is what Follow follows: Channel from From on (nil: from
// now), looking each Poll. Skipped, if set, is told of each file that
// cannot be read (default: the logger).
type FollowRequest struct {
	Channel string
	// From is the position to follow from: a reader's cursor, its Seen
	// being file names (ID.json). nil: only what comes from now.
	From    *channel.Cursor
	Poll    time.Duration
	Skipped func(channel.Skip)
	// Wake, if set, carries names of message files the door saw appear
	// (fsnotify on this host): each is read at once, as Config.Wake's.
	Wake <-chan string
	// Started, if set, is called once the position to follow from is
	// taken: what lands after it is handed on.
	Started func()
}

// Follow calls fn with each batch of the channel's new messages, oldest
// first, until ctx ends (nil) or fn fails (its error). Polling is the
// truth: the channel is listed each Poll; the NATS announcements
// (Config.Wake) only make the next look sooner. A failed look is logged
// and the next one tried (the mount may come back).
func (m *Mount) Follow(ctx context.Context, req FollowRequest, fn func([]channel.Message) error) error {
	if err := tree.CheckName("channel", req.Channel); err != nil {
		return errkind.Wrap(errkind.Invalid, err)
	}
	var cur channel.Cursor
	if req.From != nil {
		cur = *req.From
	}
	r, err := channel.NewReader(m.cfg.Root, req.Channel, cur, channel.ReaderOptions{})
	if err != nil {
		return errkind.Wrap(errkind.Invalid, err)
	}
	if req.From == nil {
		if err := r.SeekEnd(); err != nil {
			return errkind.Wrap(errkind.Of(err), err)
		}
	}
	if req.Started != nil {
		req.Started()
	}
	var wake <-chan string
	if m.cfg.Wake != nil {
		w, stop, err := m.cfg.Wake(ctx, req.Channel)
		if err != nil {
			m.cfg.Logger.Warn("following by polling only", keyErr, err)
		} else {
			defer stop()
			wake = w
		}
	}
	poll := req.Poll
	if poll <= 0 {
		poll = DefaultFollowPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case file := <-wake:
			r.Hint(file) // read at once, even before the folder shows it
		case file := <-req.Wake:
			r.Hint(file)
		}
		msgs, skips, err := r.Scan()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.cfg.Logger.Warn("follow: scan", "channel", req.Channel, keyErr, err)
			continue
		}
		for _, s := range skips {
			if req.Skipped != nil {
				req.Skipped(s)
			} else {
				m.cfg.Logger.Warn("follow: skipped", "channel", req.Channel, "file", s.String())
			}
		}
		if len(msgs) > 0 {
			if err := fn(msgs); err != nil {
				return err
			}
		}
	}
}
