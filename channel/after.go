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
	d, err := safedir.Open(root.Channel(channel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil, nil
	}
	if err != nil {
		return nil, 0, nil, fmt.Errorf("open channel: %w", err)
	}
	defer d.Close()
	var names []tailName
	err = d.ReadDirBatches(listBatch, func(entries []fs.DirEntry) error {
		for _, e := range entries {
			name := e.Name()
			nm, err := ParseName(name)
			if err != nil {
				continue
			}
			if keep == nil || keep(name, nm) {
				names = append(names, tailName{file: name, t: nm.Time})
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, nil, fmt.Errorf("list channel: %w", err)
	}
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
