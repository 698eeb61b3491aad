package service

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// maxNamed is how many channels a not-found error names at most.
const maxNamed = 20

// channelExists returns nil when channel ch has a folder (or when that
// cannot be known: the reader then says why), else a NotFound error
// naming the tree's channels.
func (m *Mount) channelExists(ch string) error {
	_, err := os.Lstat(m.cfg.Root.Channel(ch))
	if !errors.Is(err, iofs.ErrNotExist) {
		return nil
	}
	return errkind.New(errkind.NotFound, "no channel %q %s", ch, channelList(m.cfg.Root))
}

// channelList says which channels the tree has, for an error: "(the
// channels: a, b)", at most maxNamed of them.
func channelList(root tree.Root) string {
	entries, err := os.ReadDir(root.Channels())
	var names []string
	for _, e := range entries {
		if e.IsDir() && tree.ValidName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	switch {
	case err != nil && len(names) == 0:
		return fmt.Sprintf("(cannot list the channels: %v)", err)
	case len(names) == 0:
		return "(the tree has no channel yet: 'collab send' makes one)"
	}
	slices.Sort(names)
	more := ""
	if len(names) > maxNamed {
		more = fmt.Sprintf(" and %d more", len(names)-maxNamed)
		names = names[:maxNamed]
	}
	return "(the channels: " + strings.Join(names, ", ") + more + ")"
}

// SetSince sets a transcript's start from since (collab read --since):
// a message id (After), or a duration, the messages newer than now minus
// it (Newer; not through a bridge, remote). "" leaves req as it is.
// Anything else is Invalid.
func (req *ReadRequest) SetSince(since string, remote bool) error {
	if since == "" {
		return nil
	}
	if d, err := time.ParseDuration(since); err == nil {
		if remote {
			return errkind.New(errkind.Invalid, "through a bridge, since takes a message id, not %q", since)
		}
		if d < 0 {
			return errkind.New(errkind.Invalid, "%s is negative", since)
		}
		req.Newer = max(d, time.Nanosecond) // 0s: nothing older than now
		return nil
	}
	if _, err := channel.ParseID(since); err != nil {
		return errkind.New(errkind.Invalid, "%q is neither a message id nor a duration such as 10m", since)
	}
	req.After = since
	return nil
}

// transcript is Read with All on the mount: the channel (the archive
// first with Archive), the messages after After or newer than Newer, the
// last Limit of them, and the position to follow from.
func (m *Mount) transcript(req ReadRequest) (Page, error) {
	if req.Newer < 0 {
		return Page{}, errkind.New(errkind.Invalid, "newer than %s: a negative age", req.Newer)
	}
	if req.After != "" && req.Newer != 0 || req.Since != "" || req.Before != "" {
		return Page{}, errkind.New(errkind.Invalid, "a transcript goes after a message or by age, not since or before")
	}
	if req.After != "" {
		if _, err := channel.ParseID(req.After); err != nil {
			return Page{}, errkind.New(errkind.Invalid, "after %q is not a message id", req.After)
		}
	}
	skipped := func(skips []channel.Skip) {
		for _, s := range skips {
			if req.Skipped != nil {
				req.Skipped(s)
			} else {
				m.cfg.Logger.Warn("skipped", "file", s.String())
			}
		}
	}
	opt := channel.ReaderOptions{}
	if !req.Follow {
		opt.Retries = 1 // one look: report a bad file now, not after retries
	}
	r, err := channel.NewReader(m.cfg.Root, req.Channel, channel.Cursor{}, opt)
	if err != nil {
		return Page{}, errkind.Wrap(errkind.Of(err), err)
	}
	msgs, shown, err := m.transcriptMessages(r, req, skipped)
	if err != nil {
		return Page{}, errkind.Wrap(errkind.Of(err), err)
	}
	msgs = keepAfter(msgs, req.After, req.Newer, time.Now())
	if req.Limit > 0 && len(msgs) > req.Limit {
		msgs = msgs[len(msgs)-req.Limit:]
	}
	p := Page{Messages: msgs, From: r.Cursor()}
	p.From.Seen = append(p.From.Seen, shown...)
	if len(msgs) > 0 {
		p.Last = msgs[len(msgs)-1].Key()
	}
	return p, nil
}

// transcriptMessages reads what transcript keeps from: only the newest
// Limit files when that is all it asks (never the whole channel), else
// the channel, after its archive with Archive. shown are the files of
// the newest read so, which a follow passes over.
func (m *Mount) transcriptMessages(r *channel.Reader, req ReadRequest, skipped func([]channel.Skip)) (msgs []channel.Message, shown []string, err error) {
	var skips []channel.Skip
	if req.Limit > 0 && req.After == "" && req.Newer == 0 && !req.Archive {
		if req.Follow {
			if err := r.SeekEnd(); err != nil {
				return nil, nil, err
			}
		}
		msgs, skips, err = channel.Tail(m.cfg.Root, req.Channel, "", req.Limit)
		if errors.Is(err, iofs.ErrNotExist) {
			err = nil // an empty channel, as Scan has it
		}
		for _, msg := range msgs {
			shown = append(shown, msg.File)
		}
	} else {
		msgs, skips, err = r.Scan()
	}
	if err != nil {
		return nil, nil, err
	}
	skipped(skips)
	if req.Archive {
		old, skips, err := channel.ReadArchive(m.cfg.Root, req.Channel, channel.ReaderOptions{})
		if err != nil {
			return nil, nil, err
		}
		skipped(skips)
		msgs = append(old, msgs...)
	}
	return msgs, shown, nil
}

// keepAfter keeps of msgs those after message after, or newer than now
// minus newer (neither: all). A message id not in msgs keeps the
// messages named later than it.
func keepAfter(msgs []channel.Message, after string, newer time.Duration, now time.Time) []channel.Message {
	var keep func(channel.Message) bool
	switch {
	case newer > 0:
		cut := now.Add(-newer)
		keep = func(m channel.Message) bool { return !m.Time().Before(cut) }
	case after != "":
		for i, m := range msgs {
			if m.ID == after || m.File == after+".json" {
				return msgs[i+1:]
			}
		}
		n, _ := channel.ParseID(after)
		keep = func(m channel.Message) bool {
			mn, err := channel.ParseName(m.File)
			return err == nil && mn.Time.After(n.Time)
		}
	default:
		return msgs
	}
	var out []channel.Message
	for _, m := range msgs {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}
