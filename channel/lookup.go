package channel

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"collab/internal/plumbing/safedir"
	"collab/internal/plumbing/tree"
)

// Lookup reads the message with the given id from a channel.
func Lookup(root tree.Root, channel, id string) (Message, error) {
	if err := tree.CheckName("channel", channel); err != nil {
		return Message{}, err
	}
	if _, err := ParseID(id); err != nil {
		return Message{}, fmt.Errorf("message id %q: %w", id, err)
	}
	d, err := safedir.Open(root.Channel(channel))
	if err != nil {
		return Message{}, fmt.Errorf("open channel: %w", err)
	}
	defer d.Close()
	name := id + nameSuffix
	data, _, err := d.ReadFile(name, MaxMessageSize)
	if err != nil {
		return Message{}, err
	}
	return Decode(data, name, channel)
}

// Recent returns up to n messages of a channel that come before the message
// file before (or the newest n when before is ""), in channel order, oldest
// first. Only those n files are read, besides any whose names share a
// second at the boundary. Files that cannot be read or parsed are left out.
// It is meant for building context and showing a channel's tail, not for
// delivery. A missing channel folder is empty.
func Recent(root tree.Root, channel, before string, n int) ([]Message, error) {
	if n <= 0 {
		return nil, nil
	}
	if err := tree.CheckName("channel", channel); err != nil {
		return nil, err
	}
	d, err := safedir.Open(root.Channel(channel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open channel: %w", err)
	}
	defer d.Close()
	entries, err := d.ReadDir()
	if err != nil {
		return nil, fmt.Errorf("list channel: %w", err)
	}
	var limit Name
	if before != "" {
		if limit, err = ParseName(before); err != nil {
			return nil, fmt.Errorf("recent before %q: %w", before, err)
		}
	}
	// Channel order is name time, JSON time, name. The JSON time is read
	// only where name times tie, and only once per file.
	type entry struct {
		file string
		n    Name
		m    *Message // read lazily
		bad  bool
	}
	load := func(e *entry) *Message {
		if e.m == nil && !e.bad {
			data, _, err := d.ReadFile(e.file, MaxMessageSize)
			if err == nil {
				if m, err := Decode(data, e.file, channel); err == nil {
					e.m = &m
				}
			}
			e.bad = e.m == nil
		}
		return e.m
	}
	ts := func(e *entry) time.Time {
		if m := load(e); m != nil {
			return m.Time()
		}
		return e.n.Time
	}
	compare := func(a, b *entry) int {
		if c := a.n.Time.Compare(b.n.Time); c != 0 {
			return c
		}
		return cmp.Or(ts(a).Compare(ts(b)), strings.Compare(a.file, b.file))
	}
	var self *entry // nil: no bound
	if before != "" {
		self = &entry{file: before, n: limit}
	}
	var older []*entry
	for _, de := range entries {
		nm, err := ParseName(de.Name())
		if err != nil || de.Name() == before {
			continue
		}
		if e := (&entry{file: de.Name(), n: nm}); self == nil || compare(e, self) < 0 {
			older = append(older, e)
		}
	}
	slices.SortFunc(older, compare)
	var out []Message
	for i := len(older) - 1; i >= 0 && len(out) < n; i-- {
		if m := load(older[i]); m != nil {
			out = append(out, *m)
		}
	}
	slices.Reverse(out)
	return out, nil
}
