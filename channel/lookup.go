package channel

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
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
// first. Files that cannot be read or parsed are left out. It is meant for
// building context and showing a channel's tail, not for delivery. A
// missing channel folder is empty.
//
// Its cost follows n, not the channel: the folder's names are listed (and
// only the newest kept), then files are read newest first until n
// messages are found. Besides those, only files whose names share the
// second at the boundary are read, once, for their timestamps.
func Recent(root tree.Root, channel, before string, n int) ([]Message, error) {
	msgs, _, err := Tail(root, channel, before, n)
	return msgs, err
}

// onTailRead, when set (by tests), is called with each file Tail reads.
var onTailRead func(file string)

// Tail is [Recent] that also reports the files it looked at and could not
// return.
func Tail(root tree.Root, channel, before string, n int) ([]Message, []Skip, error) {
	if n <= 0 {
		return nil, nil, nil
	}
	if err := tree.CheckName("channel", channel); err != nil {
		return nil, nil, err
	}
	var limit Name
	if before != "" {
		var err error
		if limit, err = ParseName(before); err != nil {
			return nil, nil, fmt.Errorf("recent before %q: %w", before, err)
		}
	}
	d, err := safedir.Open(root.Channel(channel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil // no message yet
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open channel: %w", err)
	}
	defer d.Close()
	t := tail{d: d, channel: channel, before: before, limit: limit}
	// Keep a few more names than asked, for files that do not parse; list
	// again with more if that is not enough.
	for keep := n + 8; ; keep *= 4 {
		names, pruned, err := t.names(keep)
		if err != nil {
			return nil, nil, err
		}
		t.prefetch(names, n)
		msgs, skips, short := t.read(names, n)
		if !short || !pruned {
			return msgs, skips, nil
		}
	}
}

// tail is one call of Tail.
type tail struct {
	d       *safedir.Dir
	channel string
	before  string // "": no bound
	limit   Name
	pre     map[string]loaded // files read ahead by prefetch, until loaded
}

// loaded is a file read and decoded (or not) by load.
type loaded struct {
	m    Message
	skip Skip
	ok   bool
}

// prefetch reads and decodes side by side, one goroutine per core, the
// newest names that are alone in their second, up to n: a read almost
// always needs all of them, and decoding a 1 MB message is most of a
// read's cost. A name that shares its second with another is left to
// read, which orders the second by timestamp first.
func (t *tail) prefetch(names []tailName, n int) {
	k := 0
	for k < len(names) && k < n && (k+1 == len(names) || !names[k+1].t.Equal(names[k].t)) &&
		(k == 0 || !names[k-1].t.Equal(names[k].t)) && (t.before == "" || !names[k].t.Equal(t.limit.Time)) {
		k++
	}
	if k < 2 {
		return
	}
	out := make([]loaded, k)
	workers := min(runtime.GOMAXPROCS(0), k)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < k; i += workers {
				out[i].m, out[i].skip, out[i].ok = t.read1(names[i].file)
			}
		})
	}
	wg.Wait()
	t.pre = make(map[string]loaded, k)
	for i := range k {
		if onTailRead != nil {
			onTailRead(names[i].file)
		}
		t.pre[names[i].file] = out[i]
	}
}

type tailName struct {
	file string
	t    time.Time // the time in the name
}

// names lists the folder and returns at least the newest keep message
// names before the bound (all names of the oldest second kept), newest
// second first, and whether older names were left out.
func (t *tail) names(keep int) ([]tailName, bool, error) {
	var out []tailName
	pruned := false
	// Once keep names are held, a name whose second (its fixed-width
	// YYYYMMDD-HHMMSS, compared as a string) is older than the oldest
	// kept is left out without being parsed: most of a big folder.
	var cut string
	prune := func() {
		slices.SortFunc(out, func(a, b tailName) int { return b.t.Compare(a.t) })
		cutT := out[keep-1].t
		cut = namePrefix + cutT.Format(nameTime)
		i := keep
		for i < len(out) && out[i].t.Equal(cutT) {
			i++
		}
		if i < len(out) {
			clear(out[i:])
			out, pruned = out[:i], true
		}
	}
	err := t.d.ReadDirBatches(listBatch, func(entries []fs.DirEntry) error {
		for _, de := range entries {
			name := de.Name()
			if cut != "" && len(name) >= len(cut) && name[:len(cut)] < cut {
				pruned = true
				continue
			}
			nm, err := ParseName(name)
			if err != nil || name == t.before {
				continue
			}
			if t.before != "" && nm.Time.After(t.limit.Time) {
				continue
			}
			out = append(out, tailName{file: name, t: nm.Time})
		}
		if len(out) > 2*keep+listBatch {
			prune()
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("list channel: %w", err)
	}
	if len(out) > keep {
		prune()
	}
	slices.SortFunc(out, func(a, b tailName) int { return b.t.Compare(a.t) })
	return out, pruned, nil
}

// read reads names (newest second first) until n messages are found and
// returns them in channel order; short says fewer were found.
func (t *tail) read(names []tailName, n int) (msgs []Message, skips []Skip, short bool) {
	for len(names) > 0 && len(msgs) < n {
		// One second's names at a time, in channel order (JSON time,
		// then name) within it.
		j := 1
		for j < len(names) && names[j].t.Equal(names[0].t) {
			j++
		}
		group := names[:j]
		names = names[j:]
		need := n - len(msgs)
		atBound := t.before != "" && group[0].t.Equal(t.limit.Time)
		if len(group) > need || atBound {
			// Order the second by timestamp, reading only timestamps.
			ts := make([]time.Time, len(group))
			for i := range group {
				ts[i] = t.timestamp(group[i].file, group[i].t)
			}
			idx := make([]int, len(group))
			for i := range idx {
				idx[i] = i
			}
			slices.SortFunc(idx, func(a, b int) int {
				return cmp.Or(ts[b].Compare(ts[a]), strings.Compare(group[b].file, group[a].file))
			})
			var self time.Time
			if atBound {
				self = t.timestamp(t.before, t.limit.Time)
			}
			var got []Message
			for _, i := range idx {
				if len(got) == need {
					break
				}
				if atBound && cmp.Or(ts[i].Compare(self), strings.Compare(group[i].file, t.before)) > 0 {
					continue // after the bound
				}
				if m, sk, ok := t.load(group[i].file); ok {
					got = append(got, m)
				} else {
					skips = append(skips, sk)
				}
			}
			slices.Reverse(got)
			msgs = append(got, msgs...)
			continue
		}
		var got []Message
		for _, e := range group {
			if m, sk, ok := t.load(e.file); ok {
				got = append(got, m)
			} else {
				skips = append(skips, sk)
			}
		}
		slices.SortFunc(got, func(a, b Message) int {
			return cmp.Or(a.Time().Compare(b.Time()), strings.Compare(a.File, b.File))
		})
		if len(got) > need { // cannot happen: the group fits
			got = got[len(got)-need:]
		}
		msgs = append(got, msgs...)
	}
	return msgs, skips, len(msgs) < n
}

// load reads and decodes one message file, unless prefetch did.
func (t *tail) load(file string) (Message, Skip, bool) {
	if l, ok := t.pre[file]; ok {
		delete(t.pre, file)
		return l.m, l.skip, l.ok
	}
	if onTailRead != nil {
		onTailRead(file)
	}
	return t.read1(file)
}

// read1 reads and decodes one message file.
func (t *tail) read1(file string) (Message, Skip, bool) {
	data, _, err := t.d.ReadFile(file, MaxMessageSize)
	if err != nil {
		reason := SkipUnreadable
		if errors.Is(err, safedir.ErrTooLarge) {
			reason = SkipTooLarge
		}
		return Message{}, Skip{File: file, Reason: reason, Err: err}, false
	}
	m, err := Decode(data, file, t.channel)
	if err != nil {
		return Message{}, Skip{File: file, Reason: SkipMalformed, Err: err}, false
	}
	return m, Skip{}, true
}

// timestamp returns a file's channel time (its timestamp field, else the
// time in its name), reading the file only up to that field and keeping
// none of it.
func (t *tail) timestamp(file string, named time.Time) time.Time {
	if onTailRead != nil {
		onTailRead(file)
	}
	f, err := t.d.OpenRead(file, MaxMessageSize)
	if err != nil {
		return named
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, MaxMessageSize))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return named
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return named
		}
		if key != "timestamp" {
			if err := dec.Decode(&skipValue{}); err != nil {
				return named
			}
			continue
		}
		var s string
		if dec.Decode(&s) != nil {
			return named
		}
		ts, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return named
		}
		return ts.UTC()
	}
	return named
}

// skipValue decodes any JSON value into nothing.
type skipValue struct{}

func (*skipValue) UnmarshalJSON([]byte) error { return nil }
