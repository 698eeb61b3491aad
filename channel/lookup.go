package channel

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"collab/safedir"
	"collab/tree"
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
// file before, in channel order, oldest first. Files that cannot be read or
// parsed are left out. It is meant for building context, not for delivery.
func Recent(root tree.Root, channel, before string, n int) ([]Message, error) {
	if n <= 0 {
		return nil, nil
	}
	if err := tree.CheckName("channel", channel); err != nil {
		return nil, err
	}
	d, err := safedir.Open(root.Channel(channel))
	if err != nil {
		return nil, fmt.Errorf("open channel: %w", err)
	}
	defer d.Close()
	entries, err := d.ReadDir()
	if err != nil {
		return nil, fmt.Errorf("list channel: %w", err)
	}
	limit, err := ParseName(before)
	if err != nil {
		return nil, fmt.Errorf("recent before %q: %w", before, err)
	}
	type named struct {
		file string
		n    Name
	}
	var older []named
	for _, e := range entries {
		nm, err := ParseName(e.Name())
		if err != nil || e.Name() == before {
			continue
		}
		if c := nm.Time.Compare(limit.Time); c < 0 || c == 0 && e.Name() < before {
			older = append(older, named{e.Name(), nm})
		}
	}
	slices.SortFunc(older, func(a, b named) int {
		return cmp.Or(a.n.Time.Compare(b.n.Time), strings.Compare(a.file, b.file))
	})
	var out []Message
	for i := len(older) - 1; i >= 0 && len(out) < n; i-- {
		data, _, err := d.ReadFile(older[i].file, MaxMessageSize)
		if err != nil {
			continue
		}
		if m, err := Decode(data, older[i].file, channel); err == nil {
			out = append(out, m)
		}
	}
	slices.Reverse(out)
	return out, nil
}
