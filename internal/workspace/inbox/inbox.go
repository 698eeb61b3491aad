// Package inbox is an agent's inbox: the messages addressed to it (docs/protocol.md#addressing,
// [channel.Message.IsFor]) that it has not acknowledged yet, across its
// channels, each with a priority.
//
// # Channels
//
// An inbox covers the channels given in [Options.Channels], or, when none
// are given, every channel folder under ROOT/channels at the time of the
// call (agents are not registered per channel, and a mention in any
// channel is for the agent). Archived messages are not in the inbox.
//
// # The read cursor
//
// What an agent acknowledged is kept per channel in
// ROOT/state/AGENT/inbox/CHANNEL.json, rewritten atomically (package
// safedir), {"version": 1, "saved": TIME, "cursor": CURSOR} ([ReadCursor],
// [WriteCursor]; a remote host keeps the same files, package remote), as
// a [channel.Cursor]: the set of message names already
// acknowledged, plus a floor below which everything is. It is not "the last
// id or timestamp read": a message whose name sorts earlier than one already
// acknowledged (its writer's clock is behind) and that arrives later is not
// in the set, so it is still unread. The floor trails the newest
// acknowledged name by the skew window ([channel.DefaultSkewWindow]), as for
// the watcher's own reader; a message named further back than that when it
// arrives is not shown.
//
// [Inbox.Check] returns the unread messages (in priority order, see
// Priority) and acknowledges exactly the
// messages it looked at; [Inbox.Peek] returns them and changes nothing
// ([Inbox.PeekNewest]: only the newest few, reading little more);
// [Inbox.Ack] acknowledges the messages present now up to a message id or a
// time. With an id, a message that arrived (file mtime, the file server's
// clock) after that message is left unread even when it sorts before it:
// the agent may not have seen it when it read up to the id. With a time
// there is no such guard, so prefer ids, or Check.
//
// Two processes of one agent checking at once may both show a message, and
// one's acknowledgement may be overwritten by the other's; a message is
// then shown again, never lost.
//
// # Priority
//
// A message's sender may set its priority: the metadata extension
// "priority" ([ExtPriority]) as "high", "normal" or "low" (a signed
// message's only when its extras are signed, [channel.Message.Extension]).
// Otherwise a message is [High] when it addresses several agents (its "to"
// and its @mentions name more than one) or says urgent, asap, blocked or
// critical as a whole word, in any case; otherwise [Normal]. Only its
// sender makes a message [Low].
//
// The inbox lists [High] first, then [Normal], then [Low], each in channel
// order, oldest first ([ByPriority]); the watcher answers its backlog in
// the same order.
package inbox

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Priority of an inbox item.
type Priority string

// The priorities.
const (
	Normal Priority = "normal"
	High   Priority = "high"
	Low    Priority = "low"
)

// ExtPriority is the metadata extension in which a sender sets its
// message's priority.
const ExtPriority = "priority"

// Rank is p's place in the inbox's order: High 0, Normal 1, Low 2 (an
// unknown priority is Normal's).
func (p Priority) Rank() int {
	switch p {
	case High:
		return 0
	case Low:
		return 2
	}
	return 1
}

// ParsePriority parses "high", "normal" or "low".
func ParsePriority(s string) (Priority, error) {
	switch p := Priority(s); p {
	case High, Normal, Low:
		return p, nil
	}
	return "", fmt.Errorf("priority %q is not high, normal or low", s)
}

// SetPriority sets m's priority ([ExtPriority]); its sender signs it
// with the extras when it posts m.
func SetPriority(m *channel.Message, p Priority) {
	v, _ := json.Marshal(string(p))
	m.SetExtension(ExtPriority, v)
}

// ByPriority orders items High first, then Normal, then Low, keeping
// their order within each priority.
func ByPriority(items []Item) {
	slices.SortStableFunc(items, func(a, b Item) int { return cmp.Compare(a.Priority.Rank(), b.Priority.Rank()) })
}

// ErrUnknownMessage is returned by Ack for an id found in none of the
// inbox's channels.
var ErrUnknownMessage = errors.New("inbox: no such message")

// Item is one unread message.
type Item struct {
	Channel  string          `json:"channel"`
	Priority Priority        `json:"priority"`
	Message  channel.Message `json:"message"`
}

// Options tune an Inbox; zero fields take defaults.
type Options struct {
	// Channels limits the inbox to these channels; empty means every
	// channel in the tree.
	Channels []string
	// SkewWindow is how far behind the newest acknowledged name a late
	// message may be named and still be shown; default
	// channel.DefaultSkewWindow.
	SkewWindow time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Aliases are the agent's other names by channel (channel → names):
	// in that channel a message addressed to one of them is for the
	// agent ([channel.Message.IsForAny]). For an agent of a workflow
	// instance, workflow.AgentAliases gives its instance's channel and
	// its NAME.
	Aliases map[string][]string
}

// Inbox is one agent's inbox. Each call reads the tree afresh; an Inbox
// holds no open files.
type Inbox struct {
	root  tree.Root
	agent string
	opt   Options
}

// New returns agent's inbox.
func New(root tree.Root, agent string, opt Options) (*Inbox, error) {
	if err := tree.CheckName("agent", agent); err != nil {
		return nil, err
	}
	for _, c := range opt.Channels {
		if err := tree.CheckName("channel", c); err != nil {
			return nil, err
		}
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Inbox{root: root, agent: agent, opt: opt}, nil
}

// Peek returns the unread messages in priority order (each priority's
// oldest first) and acknowledges nothing.
func (b *Inbox) Peek() ([]Item, error) { return b.unread(false) }

// PeekNewest is Peek bounded: it returns the newest limit unread messages
// (across the channels), in priority order, and how many more there may be (the
// unread messages left out, and the unread files it did not read, which
// may not be for the agent). It acknowledges nothing.
//
// Its cost follows limit, not the channels: per channel, the names are
// listed and the acknowledged ones left unread (the cursor holds names);
// the others are read newest first until limit are for the agent.
func (b *Inbox) PeekNewest(limit int) (items []Item, more int, err error) {
	chans, err := b.channels()
	if err != nil {
		return nil, 0, err
	}
	for _, c := range chans {
		cur, err := b.load(c)
		if err != nil {
			return nil, 0, err
		}
		forMe := func(m *channel.Message) bool { return b.isFor(c, m) }
		msgs, n, _, err := channel.Newest(b.root, c, limit, cur.Unread(), forMe) // skipped files are the channel readers' to report
		if err != nil {
			return nil, 0, err
		}
		more += n
		for _, m := range msgs {
			items = append(items, Item{Channel: c, Priority: PriorityOf(&m), Message: m})
		}
	}
	sortItems(items)
	if len(items) > limit {
		more += len(items) - limit
		items = items[len(items)-limit:]
	}
	ByPriority(items)
	return items, more, nil
}

// isFor reports whether m, a message of channel c, is for the agent: by
// its id, or in c by one of its aliases there.
func (b *Inbox) isFor(c string, m *channel.Message) bool {
	return m.IsForAny(b.agent, b.opt.Aliases[c]...)
}

// Check returns the unread messages in priority order (each priority's
// oldest first) and acknowledges them.
func (b *Inbox) Check() ([]Item, error) { return b.unread(true) }

func (b *Inbox) unread(ack bool) ([]Item, error) {
	chans, err := b.channels()
	if err != nil {
		return nil, err
	}
	var items []Item
	for _, c := range chans {
		cur, r, msgs, err := b.scan(c)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if b.isFor(c, &m) {
				items = append(items, Item{Channel: c, Priority: PriorityOf(&m), Message: m})
			}
		}
		if ack {
			if err := b.save(c, cur, r.Cursor()); err != nil {
				return nil, err
			}
		}
	}
	sortItems(items)
	ByPriority(items)
	return items, nil
}

// Until is how far Ack acknowledges: up to and including the message ID,
// or every message whose time is at or before Time.
type Until struct {
	ID   string
	Time time.Time
}

// ParseUntil parses a message id (msg-…) or an RFC 3339 time.
func ParseUntil(s string) (Until, error) {
	if strings.HasPrefix(s, "msg-") {
		if _, err := channel.ParseID(s); err != nil {
			return Until{}, fmt.Errorf("until %q: %w", s, err)
		}
		return Until{ID: s}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.IsZero() {
		return Until{}, fmt.Errorf("until %q is neither a message id (msg-…) nor an RFC 3339 time (2026-01-11T16:33:15Z)", s)
	}
	return Until{Time: t.UTC()}, nil
}

func (u Until) String() string {
	if u.ID != "" {
		return u.ID
	}
	return u.Time.Format(time.RFC3339Nano)
}

// anchor is the message an id-Until names.
type anchor struct {
	key     orderKey
	arrived time.Time
}

// Ack acknowledges the unread messages up to until (see the package doc)
// and returns how many of them were for the agent.
func (b *Inbox) Ack(until Until) (int, error) {
	if until.ID == "" && until.Time.IsZero() {
		return 0, errors.New("inbox: ack: no message id or time")
	}
	chans, err := b.channels()
	if err != nil {
		return 0, err
	}
	var at *anchor
	if until.ID != "" {
		if at, err = b.find(chans, until.ID); err != nil {
			return 0, err
		}
	}
	n := 0
	for _, c := range chans {
		cur, _, msgs, err := b.scan(c)
		if err != nil {
			return n, err
		}
		seen := slices.Clone(cur.Seen)
		var dir *safedir.Dir // the channel's folder, opened once at need
		if at != nil && len(msgs) > 0 {
			if dir, err = safedir.Open(b.root.Channel(c)); err != nil {
				return n, fmt.Errorf("ack until %s: %w", until.ID, err)
			}
		}
		for _, m := range msgs {
			if !b.covers(dir, &m, until, at) {
				continue
			}
			seen = append(seen, m.File)
			if b.isFor(c, &m) {
				n++
			}
		}
		if dir != nil {
			dir.Close()
		}
		// The reader's own rule moves the floor.
		r, err := channel.NewReader(b.root, c, channel.Cursor{Floor: cur.Floor, Seen: seen}, b.readerOptions())
		if err != nil {
			return n, err
		}
		if err := b.save(c, cur, r.Cursor()); err != nil {
			return n, err
		}
	}
	return n, nil
}

// AckFiles acknowledges exactly the messages of channel c named by files
// (message file names), and nothing before them: a reader that hands
// messages on one by one (collab join) acknowledges what it handed, not
// what came meanwhile.
func (b *Inbox) AckFiles(c string, files []string) error {
	if err := tree.CheckName("channel", c); err != nil {
		return err
	}
	for _, f := range files {
		if _, err := channel.ParseName(f); err != nil {
			return fmt.Errorf("inbox: ack: %w", err)
		}
	}
	cur, err := b.load(c)
	if err != nil {
		return err
	}
	seen := append(slices.Clone(cur.Seen), files...)
	// The reader's own rule moves the floor.
	r, err := channel.NewReader(b.root, c, channel.Cursor{Floor: cur.Floor, Seen: seen}, b.readerOptions())
	if err != nil {
		return err
	}
	return b.save(c, cur, r.Cursor())
}

// covers reports whether until covers m, a message of the channel folder
// dir (nil when at is).
func (b *Inbox) covers(dir *safedir.Dir, m *channel.Message, until Until, at *anchor) bool {
	if at == nil {
		return !m.Time().After(until.Time)
	}
	if keyOf(m).compare(at.key) > 0 {
		return false
	}
	fi, err := dir.Lstat(m.File)
	return err == nil && !fi.ModTime().After(at.arrived)
}

// find locates the message id in one of chans.
func (b *Inbox) find(chans []string, id string) (*anchor, error) {
	for _, c := range chans {
		m, err := channel.Lookup(b.root, c, id)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ack until %s: %w", id, err)
		}
		fi, err := lstat(b.root.Channel(c), m.File)
		if err != nil {
			return nil, fmt.Errorf("ack until %s: %w", id, err)
		}
		return &anchor{key: keyOf(&m), arrived: fi.ModTime()}, nil
	}
	return nil, fmt.Errorf("%w: %s in %s", ErrUnknownMessage, id, strings.Join(chans, ", "))
}

// lstat returns the file info of name in the folder dir, reached with no
// symbolic link followed.
func lstat(dir, name string) (fs.FileInfo, error) {
	d, err := safedir.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Lstat(name)
}

// orderKey is a message's place in channel order (docs/protocol.md#messages).
type orderKey struct {
	name time.Time
	ts   time.Time
	file string
}

func keyOf(m *channel.Message) orderKey {
	n, _ := channel.ParseName(m.File)
	return orderKey{name: n.Time, ts: m.Time(), file: m.File}
}

func (k orderKey) compare(o orderKey) int {
	return cmp.Or(k.name.Compare(o.name), k.ts.Compare(o.ts), strings.Compare(k.file, o.file))
}

func sortItems(items []Item) {
	slices.SortStableFunc(items, func(a, b Item) int {
		return cmp.Or(keyOf(&a.Message).compare(keyOf(&b.Message)), strings.Compare(a.Channel, b.Channel))
	})
}

func (b *Inbox) readerOptions() channel.ReaderOptions {
	// One look per call: a file that does not parse now is read again by
	// the next call, since it is never acknowledged.
	return channel.ReaderOptions{Retries: 1, SkewWindow: b.opt.SkewWindow, Now: b.opt.Now}
}

// scan returns channel c's saved cursor, a reader that started from it and
// scanned once, and the messages it found.
func (b *Inbox) scan(c string) (channel.Cursor, *channel.Reader, []channel.Message, error) {
	cur, err := b.load(c)
	if err != nil {
		return cur, nil, nil, err
	}
	r, err := channel.NewReader(b.root, c, cur, b.readerOptions())
	if err != nil {
		return cur, nil, nil, err
	}
	msgs, _, err := r.Scan() // skipped files are the channel readers' to report
	if err != nil {
		return cur, nil, nil, err
	}
	return cur, r, msgs, nil
}

// channels returns the channels the inbox covers.
func (b *Inbox) channels() ([]string, error) {
	if len(b.opt.Channels) > 0 {
		return b.opt.Channels, nil
	}
	d, err := safedir.Open(b.root.Channels())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list channels: %w", err)
	}
	defer d.Close()
	ents, err := d.ReadDir()
	if err != nil {
		return nil, fmt.Errorf("list channels: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && tree.ValidName(e.Name()) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// The cursor files.
const (
	stateVersion = 1
	maxState     = 16 << 20
)

// stateFile is a cursor file: {"version": 1, "saved": TIME, "cursor":
// {"floor": TIME, "seen": [NAME...]}}. Version 0 is a remote host's first
// format (package remote), {"after": ID}: everything up to the message ID
// acknowledged, read as the floor at ID's time with ID seen.
type stateFile struct {
	Version int             `json:"version"`
	Saved   time.Time       `json:"saved"`
	Cursor  *channel.Cursor `json:"cursor,omitempty"`
	After   string          `json:"after,omitempty"`
}

// load reads channel c's cursor; none yet is the zero cursor.
func (b *Inbox) load(c string) (channel.Cursor, error) {
	return ReadCursor(b.root.Inbox(b.agent), c)
}

// save writes channel c's cursor if it moved from old.
func (b *Inbox) save(c string, old, cur channel.Cursor) error {
	if old.Floor.Equal(cur.Floor) && slices.Equal(old.Seen, cur.Seen) {
		return nil
	}
	return WriteCursor(b.root.Inbox(b.agent), c, cur, b.opt.Now(), 0o666)
}

// ReadCursor reads channel c's cursor file, dir/c.json: an agent's inbox
// state on the mount (ROOT/state/AGENT/inbox) or on a remote host
// (package remote). None yet is the zero cursor. Every name in it must be
// a message name.
func ReadCursor(dir, c string) (channel.Cursor, error) {
	d, err := safedir.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return channel.Cursor{}, nil
	}
	if err != nil {
		return channel.Cursor{}, fmt.Errorf("open inbox state: %w", err)
	}
	defer d.Close()
	data, fi, err := d.ReadFile(c+".json", maxState)
	if errors.Is(err, fs.ErrNotExist) {
		return channel.Cursor{}, nil
	}
	if err != nil {
		return channel.Cursor{}, fmt.Errorf("read inbox state: %w", err)
	}
	if safedir.CheckOwn(d.Path()+"/"+c+".json", fi) != nil {
		// Another account could have written it (to mark unread items
		// read): not used, so everything shows as unread once more, and
		// the next write replaces it. Nothing is lost.
		return channel.Cursor{}, nil
	}
	cur, err := DecodeCursor(data)
	if err != nil {
		return channel.Cursor{}, fmt.Errorf("inbox state %s/%s.json: %w", d.Path(), c, err)
	}
	return cur, nil
}

// DecodeCursor decodes a cursor file (see stateFile's formats).
func DecodeCursor(data []byte) (channel.Cursor, error) {
	var s stateFile
	if err := json.Unmarshal(data, &s); err != nil {
		return channel.Cursor{}, fmt.Errorf("corrupt: %w", err)
	}
	switch s.Version {
	case 0:
		n, err := channel.ParseID(s.After)
		if err != nil {
			return channel.Cursor{}, fmt.Errorf("after: %w", err)
		}
		return channel.Cursor{Floor: n.Time, Seen: []string{s.After + ".json"}}, nil
	case stateVersion:
		if s.Cursor == nil {
			return channel.Cursor{}, errors.New("no cursor")
		}
		for _, name := range s.Cursor.Seen {
			if _, err := channel.ParseName(name); err != nil {
				return channel.Cursor{}, err
			}
		}
		return *s.Cursor, nil
	}
	return channel.Cursor{}, fmt.Errorf("unknown version %d", s.Version)
}

// WriteCursor writes channel c's cursor file in dir atomically (made if
// missing), with the time it was saved. The folder is this account's
// alone (safedir.CreatePrivate), and ReadCursor ignores a cursor file that
// another account could have written.
func WriteCursor(dir, c string, cur channel.Cursor, saved time.Time, perm fs.FileMode) error {
	data, err := json.MarshalIndent(stateFile{Version: stateVersion, Saved: saved.UTC(), Cursor: &cur}, "", "  ")
	if err != nil {
		return err
	}
	d, err := safedir.CreatePrivate(dir)
	if err != nil {
		return fmt.Errorf("save inbox state: %w", err)
	}
	defer d.Close()
	if err := d.Replace(c+".json", append(data, '\n'), perm); err != nil {
		return fmt.Errorf("save inbox state: %w", err)
	}
	return nil
}

var urgent = regexp.MustCompile(`(?i)\b(urgent|asap|blocked|critical)\b`)

// PriorityOf returns a message's priority: its sender's ([ExtPriority]),
// else high or normal by its addressees and words (see the package doc).
func PriorityOf(m *channel.Message) Priority {
	if v, ok := m.Extension(ExtPriority); ok {
		var s string
		if json.Unmarshal(v, &s) == nil {
			if p, err := ParsePriority(s); err == nil {
				return p
			}
		}
	}
	who := Mentioned(m.Content.Text)
	if to := strings.ToLower(m.To); to != "" && to != channel.Broadcast && !slices.Contains(who, to) {
		who = append(who, to)
	}
	if len(who) > 1 || urgent.MatchString(m.Content.Text) {
		return High
	}
	return Normal
}

// Mentioned returns the agents text mentions as @NAME (the rule of
// [channel.Mentions]), lower-cased, each once, in order of appearance.
func Mentioned(text string) []string {
	var out []string
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || i > 0 && tree.NameByte(text[i-1]) {
			continue
		}
		j := i + 1
		for j < len(text) && tree.NameByte(text[j]) {
			j++
		}
		name := strings.ToLower(text[i+1 : j])
		if tree.ValidName(name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
		i = j - 1
	}
	return out
}
