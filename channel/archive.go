package channel

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Archive moves the messages of a channel named before the given time into
// its archive folder ([tree.Root.Archive]), one subfolder per month of
// their names (archive/YYYY-MM/, [tree.Root.ArchiveMonth]), unchanged.
// Readers of the channel ignore the archive folder. A move never loses or overwrites a
// message (see safedir.Dir.MoveTo). It returns how many were moved.
//
// Readers of the channel no longer see archived messages, and a watcher
// that has not yet seen a message when it is archived will not answer it:
// archive only what is well behind every watcher.
func Archive(root tree.Root, channel string, before time.Time) (int, error) {
	if err := tree.CheckName("channel", channel); err != nil {
		return 0, err
	}
	d, err := safedir.Open(root.Channel(channel))
	if err != nil {
		return 0, fmt.Errorf("open channel: %w", err)
	}
	defer d.Close()
	entries, err := d.ReadDir()
	if err != nil {
		return 0, fmt.Errorf("list channel: %w", err)
	}
	months := make(map[string]*safedir.Dir)
	defer func() {
		for _, m := range months {
			m.Close()
		}
	}()
	moved := 0
	var errs []error
	for _, e := range entries {
		n, err := ParseName(e.Name())
		if err != nil || !e.Type().IsRegular() || !n.Time.Before(before) {
			continue
		}
		month := n.Time.Format(tree.ArchiveMonthLayout)
		dst := months[month]
		if dst == nil {
			if dst, err = safedir.Create(root.ArchiveMonth(channel, n.Time)); err != nil {
				return moved, fmt.Errorf("archive folder: %w", err)
			}
			months[month] = dst
		}
		if err := d.MoveTo(e.Name(), dst); err != nil {
			errs = append(errs, err)
			continue
		}
		moved++
	}
	return moved, errors.Join(errs...)
}

// ReadArchive returns a channel's archived messages, in order.
func ReadArchive(root tree.Root, channel string, opt ReaderOptions) ([]Message, []Skip, error) {
	if err := tree.CheckName("channel", channel); err != nil {
		return nil, nil, err
	}
	d, err := safedir.Open(root.Archive(channel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	entries, err := d.ReadDir()
	d.Close()
	if err != nil {
		return nil, nil, err
	}
	var all []found
	var skips []Skip
	opt.Retries = 1
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		month, err := time.Parse(tree.ArchiveMonthLayout, e.Name())
		if err != nil {
			continue
		}
		r := newReaderAt(root.ArchiveMonth(channel, month), channel, Cursor{}, opt)
		msgs, sk, err := r.Scan()
		if err != nil {
			return nil, nil, err
		}
		skips = append(skips, sk...)
		for _, m := range msgs {
			n, _ := ParseName(m.File)
			all = append(all, foundMsg(m, n))
		}
	}
	sortFound(all)
	out := make([]Message, len(all))
	for i, f := range all {
		out[i] = f.m
	}
	return out, skips, nil
}
