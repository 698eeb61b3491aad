package channel

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"collab/safedir"
	"collab/tree"
)

const (
	// DefaultRetries is how many scans may fail to parse a file before it
	// is reported malformed.
	DefaultRetries = 3
	// DefaultSkewWindow is how far a message's name may lag behind the
	// newest name seen (a writer with a slow clock) and still be returned
	// by a reader restarted from a Cursor.
	DefaultSkewWindow = time.Hour
)

// SkipReason says why a file in a channel was not returned as a message.
type SkipReason string

// The reasons a file is skipped.
const (
	SkipName       SkipReason = "not a message name"
	SkipMalformed  SkipReason = "malformed"
	SkipTooLarge   SkipReason = "too large"
	SkipNotRegular SkipReason = "not a regular file"
	SkipSymlink    SkipReason = "symbolic link"
	SkipUnreadable SkipReason = "unreadable"
)

// Skip reports a file that a scan did not return. Each is reported once.
type Skip struct {
	File   string
	Reason SkipReason
	Err    error // the underlying error, if any
}

func (s Skip) String() string {
	if s.Err != nil {
		return fmt.Sprintf("%s: %s: %v", s.File, s.Reason, s.Err)
	}
	return fmt.Sprintf("%s: %s", s.File, s.Reason)
}

// Cursor is a Reader's position in a channel, compact enough to persist:
// every name older than Floor, and every name in Seen, has been returned.
type Cursor struct {
	Floor time.Time `json:"floor"`
	Seen  []string  `json:"seen"`
}

// ReaderOptions tune a Reader; zero fields take defaults.
type ReaderOptions struct {
	MaxSize    int64            // size limit; default MaxMessageSize
	Retries    int              // default DefaultRetries
	SkewWindow time.Duration    // default DefaultSkewWindow
	Now        func() time.Time // default time.Now
}

// Reader returns the messages of one channel, each once. A Reader is owned
// by one goroutine.
type Reader struct {
	dir     string
	channel string
	opt     ReaderOptions

	floor  time.Time
	seen   map[string]int64 // name → Unix second of its name time
	newest int64
	gen    uint64
	retry  map[string]*retry      // parse failures or unreadable, not yet reported
	bad    map[string]fingerprint // reported; read again if the file changes
}

type retry struct {
	fails    int
	reported bool // reported unreadable
	gen      uint64
}

type fingerprint struct {
	mode  fs.FileMode
	size  int64
	mtime time.Time
	gen   uint64
}

func fingerprintOf(fi fs.FileInfo) fingerprint {
	if fi == nil {
		return fingerprint{}
	}
	return fingerprint{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime()}
}

func (f fingerprint) same(g fingerprint) bool {
	return f.mode == g.mode && f.size == g.size && f.mtime.Equal(g.mtime)
}

// NewReader returns a reader of channel that starts after cur (the zero
// Cursor: from the beginning).
func NewReader(root tree.Root, channel string, cur Cursor, opt ReaderOptions) (*Reader, error) {
	if err := tree.CheckName("channel", channel); err != nil {
		return nil, err
	}
	if opt.MaxSize <= 0 {
		opt.MaxSize = MaxMessageSize
	}
	if opt.Retries <= 0 {
		opt.Retries = DefaultRetries
	}
	if opt.SkewWindow <= 0 {
		opt.SkewWindow = DefaultSkewWindow
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	r := &Reader{
		dir:     root.Channel(channel),
		channel: channel,
		opt:     opt,
		floor:   cur.Floor,
		seen:    make(map[string]int64, len(cur.Seen)),
		retry:   make(map[string]*retry),
		bad:     make(map[string]fingerprint),
	}
	for _, name := range cur.Seen {
		if n, err := ParseName(name); err == nil {
			r.see(name, n.Time)
		}
	}
	return r, nil
}

// Channel returns the channel's name.
func (r *Reader) Channel() string { return r.channel }

func (r *Reader) see(name string, t time.Time) {
	s := t.Unix()
	r.seen[name] = s
	r.newest = max(r.newest, s)
}

// Cursor returns the reader's position. Names more than the skew window
// behind the newest name seen (or behind now, if that is earlier) fall
// below the new Floor and are no longer listed.
func (r *Reader) Cursor() Cursor {
	floor := r.floor
	if r.newest != 0 {
		top := time.Unix(r.newest, 0)
		if now := r.opt.Now(); now.Before(top) {
			top = now
		}
		floor = later(floor, top.Add(-r.opt.SkewWindow).Truncate(time.Second))
	}
	c := Cursor{Floor: floor.UTC()}
	for name, s := range r.seen {
		if s >= floor.Unix() {
			c.Seen = append(c.Seen, name)
		}
	}
	slices.Sort(c.Seen)
	return c
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// SeekEnd marks every message now in the channel as returned, without
// reading it, so the next Scan returns only what arrives later.
func (r *Reader) SeekEnd() error {
	d, err := safedir.Open(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open channel %s: %w", r.channel, err)
	}
	defer d.Close()
	entries, err := d.ReadDir()
	if err != nil {
		return fmt.Errorf("list channel %s: %w", r.channel, err)
	}
	for _, e := range entries {
		if n, err := ParseName(e.Name()); err == nil {
			r.see(e.Name(), n.Time)
		}
	}
	return nil
}

// Scan returns the messages that appeared since the last scan, ordered by
// the time in their names, then their timestamps, then their names, and the
// files it skipped for the first time. A missing channel folder is empty.
// The error is for a channel that cannot be listed; skips are never errors.
func (r *Reader) Scan() ([]Message, []Skip, error) {
	d, err := safedir.Open(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open channel %s: %w", r.channel, err)
	}
	defer d.Close()
	entries, err := d.ReadDir()
	if err != nil {
		return nil, nil, fmt.Errorf("list channel %s: %w", r.channel, err)
	}
	r.gen++
	var (
		found []found
		skips []Skip
	)
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp") {
			continue // in-flight writes
		}
		if _, ok := r.seen[name]; ok {
			continue
		}
		n, err := ParseName(name)
		if err != nil {
			r.seen[name] = 0
			skips = append(skips, Skip{File: name, Reason: SkipName})
			continue
		}
		if n.Time.Before(r.floor) {
			continue
		}
		if fp, ok := r.bad[name]; ok {
			fi, err := d.Lstat(name)
			if err != nil || fingerprintOf(fi).same(fp) {
				fp.gen = r.gen
				r.bad[name] = fp
				continue
			}
			delete(r.bad, name) // changed: look again
		}
		m, skip, ok := r.read(d, name, e.Type())
		if skip != nil {
			skips = append(skips, *skip)
		}
		if ok {
			r.see(name, n.Time)
			found = append(found, foundMsg(m, n))
		}
	}
	r.forgetGone()
	slices.SortFunc(found, compareFound)
	msgs := make([]Message, len(found))
	for i, f := range found {
		msgs[i] = f.m
	}
	return msgs, skips, nil
}

// read reads one candidate file. It returns the message and ok, or a skip
// to report (at most once per file), or neither while it waits to retry.
func (r *Reader) read(d *safedir.Dir, name string, typ fs.FileMode) (Message, *Skip, bool) {
	var (
		data []byte
		fi   fs.FileInfo
		err  error
	)
	// The listing's type spares opening sockets, devices and folders.
	switch {
	case typ&fs.ModeSymlink != 0:
		err = safedir.ErrSymlink
	case !typ.IsRegular():
		err = safedir.ErrNotRegular
	default:
		data, fi, err = d.ReadFile(name, r.opt.MaxSize)
	}
	if err == nil {
		m, err := Decode(data, name, r.channel)
		if err == nil {
			delete(r.retry, name)
			return m, nil, true
		}
		rt := r.retryOf(name)
		if rt.fails++; rt.fails < r.opt.Retries {
			return Message{}, nil, false
		}
		delete(r.retry, name)
		r.markBad(name, fi)
		return Message{}, &Skip{File: name, Reason: SkipMalformed, Err: err}, false
	}
	var reason SkipReason
	switch {
	case errors.Is(err, safedir.ErrSymlink):
		reason = SkipSymlink
		fi, _ = d.Lstat(name)
	case errors.Is(err, safedir.ErrNotRegular):
		reason = SkipNotRegular
		if fi == nil {
			fi, _ = d.Lstat(name)
		}
	case errors.Is(err, safedir.ErrTooLarge):
		reason = SkipTooLarge
	case errors.Is(err, fs.ErrNotExist):
		// Listed but not openable: a negative lookup cache on NFS, or
		// removed since the listing. Try again quietly.
		r.retryOf(name)
		return Message{}, nil, false
	default:
		// Permission denied, ESTALE, EIO: report once, keep trying.
		rt := r.retryOf(name)
		if rt.reported {
			return Message{}, nil, false
		}
		rt.reported = true
		return Message{}, &Skip{File: name, Reason: SkipUnreadable, Err: err}, false
	}
	r.markBad(name, fi)
	return Message{}, &Skip{File: name, Reason: reason, Err: err}, false
}

func (r *Reader) markBad(name string, fi fs.FileInfo) {
	fp := fingerprintOf(fi)
	fp.gen = r.gen
	r.bad[name] = fp
}

func (r *Reader) retryOf(name string) *retry {
	rt := r.retry[name]
	if rt == nil {
		rt = &retry{}
		r.retry[name] = rt
	}
	rt.gen = r.gen
	return rt
}

// forgetGone drops retry and bad entries for files this scan did not see.
func (r *Reader) forgetGone() {
	for name, rt := range r.retry {
		if rt.gen != r.gen {
			delete(r.retry, name)
		}
	}
	for name, fp := range r.bad {
		if fp.gen != r.gen {
			delete(r.bad, name)
		}
	}
}

type found struct {
	m    Message
	name time.Time
	ts   time.Time
}

func foundMsg(m Message, n Name) found { return found{m: m, name: n.Time, ts: m.Time()} }

func compareFound(a, b found) int {
	return cmp.Or(a.name.Compare(b.name), a.ts.Compare(b.ts), strings.Compare(a.m.File, b.m.File))
}

// ReadAll returns every message of a channel in order, and the files it
// skipped.
func ReadAll(root tree.Root, channel string, opt ReaderOptions) ([]Message, []Skip, error) {
	opt.Retries = 1 // one pass: nothing to wait for
	r, err := NewReader(root, channel, Cursor{}, opt)
	if err != nil {
		return nil, nil, err
	}
	return r.Scan()
}
