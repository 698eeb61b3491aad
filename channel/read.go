package channel

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

const (
	// DefaultRetries is how many scans may fail to parse a file before it
	// is reported malformed.
	DefaultRetries = 3
	// DefaultSkewWindow is how far a message's name may lag behind the
	// newest name seen (a writer with a slow clock) and still be returned
	// by a reader restarted from a Cursor: the clock-skew allowance,
	// whose owner is package signing.
	DefaultSkewWindow = signing.MaxSkew
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
	// SkipNeverAppeared: a hinted file (announced over NATS) did not
	// appear within HintTTL.
	SkipNeverAppeared SkipReason = "announced but never appeared"
	// SkipBehind: a file that appeared with a name further back than the
	// skew window allows (the reader's floor): its writer's clock is far
	// behind, and it is not answered.
	SkipBehind SkipReason = "older than the skew window"
)

// Skip reports a file that a scan did not return. Each is reported once.
type Skip struct {
	File   string
	Reason SkipReason
	Err    error // the underlying error, if any
}

// String is the skip for people, control characters escaped
// ([tree.Printable]): the name comes from a listing.
func (s Skip) String() string {
	if s.Err != nil {
		return tree.Printable(fmt.Sprintf("%s: %s: %v", s.File, s.Reason, s.Err))
	}
	return tree.Printable(fmt.Sprintf("%s: %s", s.File, s.Reason))
}

// Cursor is a Reader's position in a channel, compact enough to persist:
// every name older than Floor, and every name in Seen, has been returned.
type Cursor struct {
	Floor time.Time `json:"floor"`
	Seen  []string  `json:"seen"`
}

// Add returns the cursor with the message file names added, as a Reader
// that returned them has it ([Reader.Cursor]): the Floor trails the newest
// name by opt.SkewWindow (capped by opt.Now), and the names below it are
// dropped. Other names are ignored. Nothing is read.
func (c Cursor) Add(opt ReaderOptions, names ...string) Cursor {
	seen := append(slices.Clip(c.Seen), names...)
	return newReaderAt("", "", Cursor{Floor: c.Floor, Seen: seen}, opt).Cursor()
}

// Unread returns whether the cursor leaves a message file name unread
// (a keep function for [Newest]): it is neither in Seen nor named before
// Floor.
func (c Cursor) Unread() func(name string, nm Name) bool {
	seen := newSeenSet(len(c.Seen))
	for _, name := range c.Seen {
		seen.add(name)
	}
	return func(name string, nm Name) bool { return !nm.Time.Before(c.Floor) && !seen.has(name) }
}

// ReaderOptions tune a Reader; zero fields take defaults.
type ReaderOptions struct {
	MaxSize    int64            // size limit; default MaxMessageSize
	Retries    int              // default DefaultRetries
	SkewWindow time.Duration    // default DefaultSkewWindow
	Now        func() time.Time // default time.Now

	// FullRescan bounds how long an unchanged-looking folder goes
	// unlisted; default 30 s.
	FullRescan time.Duration
	// Settle is how long after a change of the folder's attributes
	// listings go on before the attributes are trusted; default 2 s.
	Settle time.Duration
	// HintTTL is how long a hinted file may take to appear; default 2 min.
	HintTTL time.Duration
}

// Reader returns the messages of one channel, each once. A Reader is owned
// by one goroutine.
type Reader struct {
	dir     string
	channel string
	opt     ReaderOptions

	floor  time.Time
	seen   *seenSet
	newest int64 // Unix second of the newest name seen
	gen    uint64
	retry  map[string]*retry      // parse failures or unreadable, not yet reported
	bad    map[string]fingerprint // reported; read again if the file changes
	behind map[uint64]struct{}    // hashes of the names below floor listed so far

	// The listing gate (see Scan).
	stamp        safedir.Stamp // the folder's attributes at the last listing
	stampSince   time.Time     // when that stamp was first seen
	stableListed bool          // a listing was made Settle after stampSince
	listedAt     time.Time
	force        bool
	listings     int                  // how many times the folder was listed, for tests
	hints        map[string]time.Time // file → when it was hinted
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
	return newReaderAt(root.Channel(channel), channel, cur, opt), nil
}

// newReaderAt makes a reader of the folder dir holding channel's messages.
func newReaderAt(dir, channel string, cur Cursor, opt ReaderOptions) *Reader {
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
	if opt.FullRescan <= 0 {
		opt.FullRescan = 30 * time.Second
	}
	if opt.Settle <= 0 {
		opt.Settle = 2 * time.Second
	}
	if opt.HintTTL <= 0 {
		opt.HintTTL = 2 * time.Minute
	}
	r := &Reader{
		dir:     dir,
		channel: channel,
		opt:     opt,
		floor:   cur.Floor,
		seen:    newSeenSet(len(cur.Seen)),
		retry:   make(map[string]*retry),
		bad:     make(map[string]fingerprint),
	}
	for _, name := range cur.Seen {
		if n, err := ParseName(name); err == nil {
			r.see(name, n.Time)
		}
	}
	return r
}

// Channel returns the channel's name.
func (r *Reader) Channel() string { return r.channel }

func (r *Reader) see(name string, t time.Time) {
	r.seen.add(name)
	r.newest = max(r.newest, t.Unix())
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
	c := Cursor{Floor: floor.UTC(), Seen: r.seen.namesFrom(floor)}
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
	err = d.ReadDirBatches(listBatch, func(entries []fs.DirEntry) error {
		for _, e := range entries {
			if n, err := ParseName(e.Name()); err == nil {
				r.see(e.Name(), n.Time)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list channel %s: %w", r.channel, err)
	}
	return nil
}

// listBatch is how many entries of a folder a listing holds at a time.
const listBatch = 512

// Scan returns the messages that appeared since the last scan, ordered by
// the time in their names, then their timestamps, then their names, and the
// files it skipped for the first time. A missing channel folder is empty.
// The error is for a channel that cannot be listed; skips are never errors.
//
// An idle channel costs one open and one stat of its folder (asked of the
// file server, past NFS and FUSE attribute caches: see [safedir.Dir.Stamp]):
// the folder is listed only when its attributes changed, until a listing has been made at
// least [ReaderOptions.Settle] after the last change (so several writes
// within one timestamp tick are not missed), while files wait to be retried,
// after [Reader.Invalidate], and at least every
// [ReaderOptions.FullRescan] (an NFS client can cache a folder's attributes
// for up to a minute). Names given to [Reader.Hint] are read directly.
func (r *Reader) Scan() ([]Message, []Skip, error) { return r.scan(false) }

// ScanHinted is a Scan that reads only the files named by [Reader.Hint]
// (and files being written in place) and never lists the folder: what a
// watcher does when a notification names the new file, so that answering
// it does not wait for a listing of a big folder. The next Scan lists the
// folder if it changed, so nothing without a hint is missed for longer
// than until then.
func (r *Reader) ScanHinted() ([]Message, []Skip, error) { return r.scan(true) }

func (r *Reader) scan(hintsOnly bool) ([]Message, []Skip, error) {
	if hintsOnly && r.listings > 0 && len(r.hints) == 0 && !r.badChanging() {
		// Nothing to read: the folder is not opened (on NFS an open is a
		// lookup and an attribute fetch, on every turn of a watcher's
		// loop, for every channel).
		return nil, nil, nil
	}
	d, err := safedir.Open(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open channel %s: %w", r.channel, err)
	}
	defer d.Close()
	now := r.opt.Now()
	stamp, serr := d.Stamp()
	var cands []*candidate
	var skips []Skip
	if hintsOnly && r.listings > 0 || serr == nil && r.canSkip(stamp, now) {
		cands = r.hinted(d)
	} else {
		r.gen++
		err := d.ReadDirBatches(listBatch, func(entries []fs.DirEntry) error {
			cands = r.candidates(d, entries, cands, &skips)
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("list channel %s: %w", r.channel, err)
		}
		for _, s := range skips {
			r.seen.add(s.File) // reported once the listing is whole
		}
		r.listed(stamp, serr == nil, now)
	}
	loadAll(d, cands, r.channel, r.opt.MaxSize)
	var found []found
	for _, c := range cands {
		m, skip, ok := r.judge(d, c)
		if skip != nil {
			skips = append(skips, *skip)
		}
		if ok {
			r.see(c.name, c.n.Time)
			found = append(found, foundMsg(m, c.n))
		}
	}
	r.sweepHints(now, &skips)
	if len(cands) > 0 || len(skips) > 0 {
		r.forgetGone()
	}
	sortFound(found)
	msgs := make([]Message, len(found))
	for i, f := range found {
		msgs[i] = f.m
	}
	return msgs, skips, nil
}

// Invalidate makes the next Scan list the folder whatever its attributes
// say: after a wake-up from elsewhere, or any doubt.
func (r *Reader) Invalidate() { r.force = true }

// Hint tells the reader that a message file of this name should exist (a
// NATS announcement): the next scans read it directly, without a listing,
// until it appears or HintTTL passes; a hint that never appears is reported
// as a skip with reason SkipNeverAppeared.
func (r *Reader) Hint(file string) {
	if r.seen.has(file) {
		return
	}
	if n, err := ParseName(file); err != nil || n.Time.Before(r.floor) {
		return
	}
	if r.hints == nil {
		r.hints = make(map[string]time.Time)
	}
	if _, ok := r.hints[file]; !ok {
		r.hints[file] = r.opt.Now()
	}
}

// canSkip reports whether the folder can be left unlisted.
func (r *Reader) canSkip(st safedir.Stamp, now time.Time) bool {
	switch {
	case r.force, !r.stableListed, st != r.stamp, len(r.retry) > 0:
		return false
	case now.Sub(r.listedAt) >= r.opt.FullRescan:
		return false
	}
	return true
}

// listed records a full listing made at now with the folder's stamp.
func (r *Reader) listed(st safedir.Stamp, ok bool, now time.Time) {
	r.listings++
	r.force = false
	r.listedAt = now
	switch {
	case !ok:
		r.stableListed = false
	case st != r.stamp:
		r.stamp, r.stampSince, r.stableListed = st, now, false
	case now.Sub(r.stampSince) >= r.opt.Settle:
		r.stableListed = true
	}
}

// candidate is a file to read and judge.
type candidate struct {
	name string
	n    Name
	typ  fs.FileMode
	data []byte
	fi   fs.FileInfo
	err  error   // reading
	m    Message // decoded, if err is nil
	derr error   // decoding
}

// candidates appends to out the entries of (part of) a listing that are
// new or worth another look, and to skips the names that are not message
// names.
func (r *Reader) candidates(d *safedir.Dir, entries []fs.DirEntry, out []*candidate, skips *[]Skip) []*candidate {
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp") || name == tree.ArchiveDir {
			continue // in-flight writes; the archive
		}
		if r.seen.has(name) {
			continue
		}
		n, err := ParseName(name)
		if err != nil {
			*skips = append(*skips, Skip{File: name, Reason: SkipName})
			continue
		}
		if n.Time.Before(r.floor) {
			r.below(name, skips)
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
		out = append(out, &candidate{name: name, n: n, typ: e.Type()})
	}
	return out
}

// below notes a name below the floor. Those of the first listing were
// there before this reader (answered, or left behind, before); one that
// appears later was written by a host whose clock is further behind than
// the skew window, and is reported once with reason SkipBehind. Only a
// hash of each name is kept.
func (r *Reader) below(name string, skips *[]Skip) {
	h := fnv.New64a()
	h.Write([]byte(name))
	k := h.Sum64()
	if _, ok := r.behind[k]; ok {
		return
	}
	if r.behind == nil {
		r.behind = make(map[uint64]struct{})
	}
	r.behind[k] = struct{}{}
	if r.listings > 0 {
		*skips = append(*skips, Skip{File: name, Reason: SkipBehind})
	}
}

// hinted returns the hinted files that exist, to read without a listing.
// badChanging reports whether a file that failed to decode was written
// to lately: [Reader.hinted] looks at it again.
func (r *Reader) badChanging() bool {
	now := r.opt.Now()
	for _, fp := range r.bad {
		if now.Sub(fp.mtime) <= r.opt.FullRescan {
			return true
		}
	}
	return false
}

func (r *Reader) hinted(d *safedir.Dir) []*candidate {
	var out []*candidate
	for name := range r.hints {
		if _, bad := r.bad[name]; bad || r.seen.has(name) {
			continue // a bad file is looked at again below, once it changes
		}
		fi, err := d.Lstat(name)
		if err != nil {
			continue
		}
		if n, _ := ParseName(name); !n.Time.Before(r.floor) {
			out = append(out, &candidate{name: name, n: n, typ: fi.Mode().Type()})
		}
	}
	// A file that failed to decode and was written to lately may be being
	// written in place (a foreign writer without a temp file), which leaves
	// the folder's attributes unchanged: look at it again when it changes,
	// without waiting for the next full listing; hinted or not (a write in
	// place hints it again).
	now := r.opt.Now()
	for name, fp := range r.bad {
		if now.Sub(fp.mtime) > r.opt.FullRescan {
			continue
		}
		fi, err := d.Lstat(name)
		if err != nil || fingerprintOf(fi).same(fp) {
			continue
		}
		delete(r.bad, name)
		if n, err := ParseName(name); err == nil && !n.Time.Before(r.floor) {
			out = append(out, &candidate{name: name, n: n, typ: fi.Mode().Type()})
		}
	}
	return out
}

// sweepHints drops hints that were found and reports those that waited too
// long.
func (r *Reader) sweepHints(now time.Time, skips *[]Skip) {
	for name, since := range r.hints {
		if _, bad := r.bad[name]; bad || r.seen.has(name) {
			delete(r.hints, name) // found (a bad file is reported once)
		} else if now.Sub(since) > r.opt.HintTTL {
			delete(r.hints, name)
			*skips = append(*skips, Skip{File: name, Reason: SkipNeverAppeared})
		}
	}
}

// loadAll reads and decodes the candidates, several at a time when there
// are many (a backlog on NFS is bound by round trips, not CPU).
func loadAll(d *safedir.Dir, cands []*candidate, channel string, limit int64) {
	load := func(c *candidate) {
		switch {
		case c.typ&fs.ModeSymlink != 0:
			c.err = safedir.ErrSymlink
		case !c.typ.IsRegular():
			c.err = safedir.ErrNotRegular
		default:
			c.data, c.fi, c.err = d.ReadFile(c.name, limit)
			if c.err == nil {
				c.m, c.derr = Decode(c.data, c.name, channel)
				c.data = nil
			}
		}
	}
	if len(cands) < 64 {
		for _, c := range cands {
			load(c)
		}
		return
	}
	next := make(chan *candidate)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for c := range next {
				load(c)
			}
		})
	}
	for _, c := range cands {
		next <- c
	}
	close(next)
	wg.Wait()
}

// judge decides on one loaded candidate. It returns the message and ok, or
// a skip to report (at most once per file), or neither while it waits to
// retry.
func (r *Reader) judge(d *safedir.Dir, c *candidate) (Message, *Skip, bool) {
	name, fi, err := c.name, c.fi, c.err
	if err == nil {
		if c.derr == nil {
			delete(r.retry, name)
			return c.m, nil, true
		}
		rt := r.retryOf(name)
		if rt.fails++; rt.fails < r.opt.Retries {
			return Message{}, nil, false
		}
		delete(r.retry, name)
		r.markBad(name, fi)
		return Message{}, &Skip{File: name, Reason: SkipMalformed, Err: c.derr}, false
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

func sortFound(f []found) { slices.SortFunc(f, compareFound) }

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
