package channel

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// onNewestRead, when set (by tests), is called with each file Newest reads.
var onNewestRead func(file string)

// Newest returns the newest n messages of a channel among those whose
// names keep accepts and that accept accepts (nil: all), in channel order,
// oldest first, and how many more there may be: names that keep accepted
// and that were never read, plus accepted messages left out by n. Files
// that cannot be read or parsed are left out and reported as skips. A
// missing channel folder is empty.
//
// Its cost follows what it returns, not the channel: the folder's names are
// listed and judged by keep without reading any file, then the kept ones
// are read newest first (by the time in their names) until n messages are
// accepted, and the rest of that second's names, so that the boundary
// follows channel order. keep is the place to leave out names by their
// time: a name it refuses is never read.
func Newest(root tree.Root, channel string, n int, keep func(name string, nm Name) bool, accept func(*Message) bool) (msgs []Message, more int, skips []Skip, err error) {
	if err := tree.CheckName("channel", channel); err != nil {
		return nil, 0, nil, err
	}
	if n <= 0 {
		return nil, 0, nil, nil
	}
	d, names, err := listNames(root, channel, keep)
	if d == nil || err != nil {
		return nil, 0, nil, err
	}
	defer d.Close()
	slices.SortFunc(names, func(a, b tailName) int {
		return cmp.Or(b.t.Compare(a.t), strings.Compare(b.file, a.file))
	})
	t := tail{d: d, channel: channel}
	var got []found
	i := 0
	for i < len(names) {
		if len(got) >= n && !names[i].t.Equal(names[i-1].t) {
			break // the boundary second is read whole
		}
		if onNewestRead != nil {
			onNewestRead(names[i].file)
		}
		m, sk, ok := t.load(names[i].file)
		switch {
		case !ok:
			skips = append(skips, sk)
		case accept == nil || accept(&m):
			got = append(got, found{m: m, name: names[i].t, ts: m.Time()})
		}
		i++
	}
	sortFound(got)
	more = len(names) - i
	if len(got) > n {
		more += len(got) - n
		got = got[len(got)-n:]
	}
	msgs = make([]Message, len(got))
	for j, f := range got {
		msgs[j] = f.m
	}
	return msgs, more, skips, nil
}

// After returns a keep function for [Newest] that leaves out the names
// whose time is more than margin before t.
func After(t time.Time, margin time.Duration) func(string, Name) bool {
	from := t.Add(-margin).Truncate(time.Second)
	return func(_ string, nm Name) bool { return !nm.Time.Before(from) }
}

// Following returns the first n messages of a channel that come after the
// message after in channel order (after "": from the oldest), oldest
// first, and how many more there may be after them. The message after need
// not exist any more: the order of its name decides. Files that cannot be
// read or parsed are left out and reported as skips. A missing channel
// folder is empty.
//
// Its cost follows what it returns, as [Newest]'s: the folder's names are
// listed, and only those from after's second on are read, oldest first,
// until n messages are found, and the rest of that second's names.
func Following(root tree.Root, channel, after string, n int) (msgs []Message, more int, skips []Skip, err error) {
	if err := tree.CheckName("channel", channel); err != nil {
		return nil, 0, nil, err
	}
	var from found
	if after != "" {
		an, err := ParseID(after)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("message id %q: %w", after, err)
		}
		from = found{name: an.Time, m: Message{File: after + nameSuffix}}
		if m, err := Lookup(root, channel, after); err == nil {
			from.ts = m.Time()
		} else {
			from.ts = an.Time
		}
	}
	if n <= 0 {
		return nil, 0, nil, nil
	}
	d, names, err := listNames(root, channel, func(_ string, nm Name) bool {
		return after == "" || !nm.Time.Before(from.name)
	})
	if d == nil || err != nil {
		return nil, 0, nil, err
	}
	defer d.Close()
	slices.SortFunc(names, func(a, b tailName) int {
		return cmp.Or(a.t.Compare(b.t), strings.Compare(a.file, b.file))
	})
	t := tail{d: d, channel: channel}
	var got []found
	i := 0
	for i < len(names) {
		if len(got) >= n && !names[i].t.Equal(names[i-1].t) {
			break // the boundary second is read whole
		}
		m, sk, ok := t.load(names[i].file)
		i++
		if !ok {
			skips = append(skips, sk)
			continue
		}
		f := found{m: m, name: names[i-1].t, ts: m.Time()}
		if after != "" && compareFound(f, from) <= 0 {
			continue
		}
		got = append(got, f)
	}
	sortFound(got)
	more = len(names) - i
	if len(got) > n {
		more += len(got) - n
		got = got[:n]
	}
	msgs = make([]Message, len(got))
	for j, f := range got {
		msgs[j] = f.m
	}
	return msgs, more, skips, nil
}

// listNames opens channel's folder and lists the message names keep
// (nil: all) accepts, reading no file. No folder is a nil Dir and no
// error; the caller closes a Dir it gets.
func listNames(root tree.Root, channel string, keep func(name string, nm Name) bool) (*safedir.Dir, []tailName, error) {
	d, err := safedir.Open(root.Channel(channel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open channel: %w", err)
	}
	var names []tailName
	err = d.ReadDirBatches(listBatch, func(entries []fs.DirEntry) error {
		for _, e := range entries {
			name := e.Name()
			if nm, err := ParseName(name); err == nil && (keep == nil || keep(name, nm)) {
				names = append(names, tailName{file: name, t: nm.Time})
			}
		}
		return nil
	})
	if err != nil {
		d.Close()
		return nil, nil, fmt.Errorf("list channel: %w", err)
	}
	return d, names, nil
}
