package watcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/plumbing/randhex"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// The outbox (ROOT/state/AGENT/outbox, tree.Root.Outbox) keeps replies the
// watcher has not yet posted, so that a full
// disk (ENOSPC), a lost mount or a permission error does not lose a reply
// the model has already written.
//
// A reply that cannot be posted is written to
// ROOT/state/AGENT/outbox/CHANNEL.MESSAGE.json (sealed, like watch.json),
// tried again at each poll, backing off from Poll to 32×Poll, and the file
// is removed once the reply is in the channel; at startup the outbox is
// posted before anything else. (Writing every reply to the outbox before
// posting it would cost two more fsyncs a reply and buy little: a watcher
// that dies before posting leaves the message pending and claimed, and the
// next start answers it again under the same reply token.) When the outbox
// file itself cannot be written (the state is on the same full disk), the
// reply is kept in memory, retried the same way, and its file is written as
// soon as there is room: only such a reply is lost if the watcher stops
// before space returns, and it says so.
//
// A full disk that also holds the state is why the outbox keeps a reserve:
// ROOT/state/AGENT/outbox/.reserve, 2 MiB of allocated space (fallocate,
// or zeros where the filesystem cannot). When an outbox entry cannot be
// written for want of space, the watcher removes the reserve and writes the
// entry in the room it frees; the reserve is made again once the outbox is
// empty and there is room. While a reply is held only in memory, the
// watcher starts no new run: its reply would have nowhere to go either.
//
// Exactly one reply: each attempt first looks for a reply already posted
// (alreadyReplied), then reserves the reply's id with the message's reply
// token and posts under that id without replacing. An attempt that posted
// but reported a failure (an NFS reply lost), a second watcher, or a
// restart therefore never adds a second reply. A reply is never partly
// visible: messages are published whole (package safedir).

// The outbox's reserve: its name (a dot-file, ignored by every reader of
// the tree and never swept as a temp file) and size, enough for a reply at
// the message size limit.
const (
	reserveName = ".reserve"
	reserveSize = 2 << 20
)

// outboxEntry is a reply waiting in the outbox.
type outboxEntry struct {
	Channel string `json:"channel"`
	Message string `json:"message"` // the key of the message answered
	From    string `json:"from"`    // its sender
	Hops    int    `json:"hops"`    // its hops
	// Status is the claim status once the reply is posted: replied, or
	// failed for an error reply.
	Status  string          `json:"status"`
	Reply   channel.Message `json:"reply"` // without id: the reply token names it
	Created time.Time       `json:"created"`

	durable bool // its file is written
	owned   bool // this watcher owns the message's claim
}

func (e *outboxEntry) ref() ref { return ref{Channel: e.Channel, ID: e.Message} }

// file is the entry's file name: a channel name and a message key hold no
// '.', so the name parses back even when the content is corrupt.
func (e *outboxEntry) file() string { return e.Channel + "." + e.Message + ".json" }

func parseOutboxName(name string) (ref, bool) {
	base, ok := strings.CutSuffix(name, ".json")
	ch, id, ok2 := strings.Cut(base, ".")
	if !ok || !ok2 || !tree.ValidName(ch) || id == "" || strings.Contains(id, ".") {
		return ref{}, false
	}
	for i := 0; i < len(id); i++ {
		if !tree.NameByte(id[i]) {
			return ref{}, false
		}
	}
	return ref{Channel: ch, ID: id}, true
}

// item is what the claim and reply functions need of the message answered.
func (e *outboxEntry) item() item {
	return item{msg: channel.Message{
		ID: e.Message, SessionID: e.Channel, From: e.From,
		Metadata: channel.Metadata{Hops: e.Hops},
	}}
}

// outbox is the watcher's queue of unposted replies. Owned by the loop.
type outbox struct {
	entries  []*outboxEntry // oldest first
	fails    int            // failed attempts in a row
	next     time.Time      // no retry before
	reserved bool           // the reserve is in place
	remake   time.Time      // no attempt to make the reserve before
}

// inMemory reports whether a reply is held only in memory.
func (o *outbox) inMemory() bool {
	return slices.ContainsFunc(o.entries, func(e *outboxEntry) bool { return !e.durable })
}

func (o *outbox) find(r ref) *outboxEntry {
	for _, e := range o.entries {
		if e.ref() == r {
			return e
		}
	}
	return nil
}

func (w *watcher) outboxPath() string { return w.cfg.Root.Outbox(w.cfg.Agent) }

// persist writes e's file.
func (w *watcher) persist(e *outboxEntry) error {
	data, err := seal(e)
	if err != nil {
		return err
	}
	d, err := safedir.CreatePrivate(w.outboxPath())
	if err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	defer d.Close()
	err = d.Replace(e.file(), data, 0o644)
	if isNoSpace(err) && d.Remove(reserveName) == nil {
		w.outbox.reserved = false
		w.log.Warn("disk full: the outbox's reserve makes room for a reply", keyMsg, e.Message)
		err = d.Replace(e.file(), data, 0o644)
	}
	if err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	e.durable = true
	return nil
}

func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// reserve makes the outbox's reserve if it is not in place and the outbox
// is empty (the room is theirs until then). A failure is logged once a
// minute and tried again after 5 polls: a disk without room for the
// reserve is what it is for.
func (w *watcher) reserve() {
	now := w.now()
	if w.outbox.reserved || len(w.outbox.entries) > 0 || now.Before(w.outbox.remake) {
		return
	}
	d, err := safedir.CreatePrivate(w.outboxPath())
	if err == nil {
		err = roomForReserve(w.outboxPath())
		if err == nil {
			err = d.Reserve(reserveName, reserveSize)
		}
		d.Close()
	}
	if err != nil {
		w.outbox.remake = now.Add(5 * w.cfg.Poll)
		w.logOnce("outbox-reserve", "cannot make the outbox's reserve; a reply may not be kept on a full disk", keyFile, w.outboxPath(), keyErr, err)
		return
	}
	if !w.outbox.remake.IsZero() {
		w.log.Info("the outbox's reserve is made again", keyFile, w.outboxPath())
	}
	w.outbox.reserved, w.outbox.remake = true, time.Time{}
}

// reserveMargin is the free space the reserve must leave on its disk:
// 64 MiB, or 5 % of a disk smaller than 1.28 GiB. The reserve is there for
// a disk that fills up; taking a nearly full disk's last free space would
// make the sends, heartbeats and who of every other program on it fail.
func reserveMargin(total uint64) uint64 { return min(64<<20, total/20) }

// roomForReserve reports an error when making the reserve in the folder
// dir would leave less than [reserveMargin] free. A reserve already there
// counts as free: making it again takes no more room.
func roomForReserve(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil // cannot tell; the reserve is small
	}
	free, total := st.Bavail*uint64(st.Bsize), st.Blocks*uint64(st.Bsize)
	if fi, err := os.Lstat(filepath.Join(dir, reserveName)); err == nil && fi.Mode().IsRegular() {
		free += uint64(fi.Size())
	}
	if free < reserveSize+reserveMargin(total) {
		return fmt.Errorf("%d KiB free: the reserve of %d KiB would leave less than %d KiB", free>>10, reserveSize>>10, reserveMargin(total)>>10)
	}
	return nil
}

// drop takes e out of the outbox.
func (w *watcher) drop(e *outboxEntry) {
	w.outbox.entries = slices.DeleteFunc(w.outbox.entries, func(x *outboxEntry) bool { return x == e })
	if !e.durable {
		return
	}
	d, err := safedir.Open(w.outboxPath())
	if err == nil {
		err = d.Remove(e.file())
		d.Close()
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Harmless: the next start finds the reply posted and removes it.
		w.logOnce("outbox-remove", "cannot remove a posted reply from the outbox", keyFile, e.file(), keyErr, err)
	}
}

// loadOutbox reads the outbox left by an earlier run. An entry that does
// not decode is set aside and its message returned, to be answered anew
// (its claim and reply token still keep the answer unique).
func (w *watcher) loadOutbox() (requeue []ref) {
	d, err := safedir.OpenPrivate(w.outboxPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		w.log.Error("cannot open the outbox; replies waiting there are not posted", keyFile, w.outboxPath(), keyErr, err)
		return nil
	}
	defer d.Close()
	list, err := d.ReadDir()
	if err != nil {
		w.log.Error("cannot list the outbox; replies waiting there are not posted", keyFile, w.outboxPath(), keyErr, err)
		return nil
	}
	for _, de := range list {
		name := de.Name()
		r, ok := parseOutboxName(name)
		if !ok || !de.Type().IsRegular() {
			continue // temp files, corrupt copies, strangers
		}
		e, err := readOutboxEntry(d, name, w.now())
		if errors.Is(err, safedir.ErrNotPrivate) {
			// Not written by this account: never posted (it would go out
			// signed as the agent), nor its message answered for it.
			w.log.Error("outbox entry not written by this account; set aside, not posted", keyChannel, r.Channel, keyMsg, r.ID, keyErr, err)
			continue
		}
		if err == nil && e.ref() != r {
			err = fmt.Errorf("%w: entry for %s/%s", errCorrupt, e.Channel, e.Message)
		}
		if errors.Is(err, errCorrupt) {
			err = setAside(d, name, w.now(), err)
			w.log.Error("corrupt outbox entry; the message will be answered again", keyChannel, r.Channel, keyMsg, r.ID, keyErr, err)
			requeue = append(requeue, r)
			continue
		}
		if err != nil {
			w.log.Error("cannot read an outbox entry; it stays there", keyFile, name, keyErr, err)
			continue
		}
		w.outbox.entries = append(w.outbox.entries, e)
	}
	slices.SortStableFunc(w.outbox.entries, func(a, b *outboxEntry) int { return a.Created.Compare(b.Created) })
	if n := len(w.outbox.entries); n > 0 {
		w.log.Info("replies waiting in the outbox", keyCount, n)
	}
	return requeue
}

func readOutboxEntry(d *safedir.Dir, name string, now time.Time) (*outboxEntry, error) {
	data, err := readOwn(d, name, 64<<20, now)
	if err != nil {
		return nil, err
	}
	payload, sealed, err := unseal(data)
	if err != nil {
		return nil, err
	}
	if !sealed {
		return nil, fmt.Errorf("%w: not sealed", errCorrupt)
	}
	e := &outboxEntry{durable: true}
	if err := json.Unmarshal(payload, e); err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	return e, nil
}

// post posts text, with the extensions ext, as the one reply to the item
// (channel.Message.Reply), through the outbox, and finishes its claim
// with status once posted. It returns the reply's id, or
// "" if nothing was posted now.
func (w *watcher) post(it *item, text, status string, ext map[string]json.RawMessage) string {
	m := &it.msg
	if e := w.outbox.find(it.ref()); e != nil {
		w.log.Warn("not posting: a reply to this message waits in the outbox", keyMsg, m.ID)
		return ""
	}
	reply := m.Reply(w.cfg.Agent, w.cfg.Host)
	reply.Content.Text = text
	for k, v := range ext {
		reply.SetExtension(k, v)
	}
	w.traceReply(it, &reply)
	e := &outboxEntry{
		Channel: m.SessionID, Message: m.Key(), From: m.From, Hops: m.Metadata.Hops,
		Status: status, Reply: reply, Created: w.now(), owned: true,
	}
	// The common case costs no outbox write: post at once. A crash before
	// the post leaves the message pending with its claim, and the next
	// start answers it again (under the same reply token).
	id, err := w.deliver(e)
	if err == nil {
		return id
	}
	w.outboxFailed()
	w.outbox.entries = append(w.outbox.entries, e)
	if perr := w.persist(e); perr != nil {
		w.log.Error("cannot post the reply nor keep it on disk; kept in memory and retried (lost if the watcher stops first)",
			keyMsg, m.ID, keyErr, err, keyOutErr, perr)
	} else {
		w.log.Warn("cannot post the reply; kept in the outbox and retried", keyMsg, m.ID, keyFile, e.file(), keyErr, err)
	}
	return ""
}

// deliver makes one attempt to post e. A nil error means e is settled: its
// reply is in the channel (posted now, and then its id is returned, or
// found there) or it can never be posted (logged). An error means: try
// again later.
func (w *watcher) deliver(e *outboxEntry) (string, error) {
	it := e.item()
	if !e.owned {
		// An entry from an earlier run: take the claim over from that run
		// (judged gone) so that it can be finished. If it is held or done,
		// post anyway: the reply token keeps the reply unique.
		if _, outcome, err := w.claims.Acquire(e.Channel, e.Message); err == nil {
			e.owned = outcome == claim.Acquired
		}
	}
	if id, ok := w.alreadyReplied(&it); ok {
		w.log.Info("not posting: a reply exists", keyMsg, e.Message, keyReply, id)
		w.finishClaim(&it, claim.Replied, id, "")
		return "", nil
	}
	id, fresh, err := w.claims.ReserveReply(e.Channel, e.Message, channel.NewID(w.cfg.Agent, w.now(), randhex.String(2)))
	if errors.Is(err, tree.ErrBadName) {
		w.log.Error("cannot reserve the reply", keyMsg, e.Message, keyErr, err)
		w.finishClaim(&it, claim.Failed, "", err.Error())
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reserve the reply: %w", err)
	}
	reply := e.Reply
	text := reply.Content.Text
	for clashes := 0; ; clashes++ {
		err = w.postUnder(&reply, id, text)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
		renewed, cerr := w.renewTaken(e, id, clashes)
		if cerr != nil {
			return "", cerr
		}
		if renewed == "" {
			break // the reply is there already
		}
		id = renewed
	}
	switch {
	case errors.Is(err, fs.ErrExist):
		w.log.Info("not posting: the reply is already posted", keyMsg, e.Message, keyReply, id, keyFresh, fresh)
		w.replied[e.ref()] = id
		w.finishClaim(&it, claim.Replied, id, "")
		return "", nil
	case errors.Is(err, channel.ErrTooLarge) || errors.Is(err, tree.ErrBadName):
		w.log.Error("cannot post the reply", keyMsg, e.Message, keyErr, err)
		w.finishClaim(&it, claim.Failed, "", err.Error())
		return "", nil
	case err != nil:
		return "", fmt.Errorf("post the reply: %w", err)
	}
	w.replied[e.ref()] = id
	w.finishClaim(&it, e.Status, id, "")
	return id, nil
}

// postUnder posts reply under id with text, cut until it fits: output
// near the CLI cap does not fit in a message once JSON-escaped.
func (w *watcher) postUnder(reply *channel.Message, id, text string) error {
	// The signature (Writer.Signer) is made as it is posted: it covers
	// the id and time given now.
	reply.ID, reply.Timestamp, reply.Content.Text, reply.Signature = id, "", text, nil
	err := w.postFile(reply)
	for size := min(len(text), channel.MaxMessageSize-8<<10); errors.Is(err, channel.ErrTooLarge) && size > 1; size /= 2 {
		reply.Content.Text = cut(text, size)
		err = w.postFile(reply)
	}
	return err
}

// renewTaken is for a reply whose id was taken: by another watcher, or by
// an earlier attempt whose success was reported as a failure (then the
// reply is there: it returns ""); or another message drew the same id,
// and it returns the id of the renewed reply token. clashes is how many
// ids were taken before this one.
func (w *watcher) renewTaken(e *outboxEntry, id string, clashes int) (string, error) {
	there, err := channel.Lookup(w.cfg.Root, e.Channel, id)
	if err != nil {
		return "", fmt.Errorf("read the message under the reply's id %s: %w", id, err)
	}
	if there.From == w.cfg.Agent && there.Metadata.InReplyTo == e.Message {
		return "", nil
	}
	if clashes == 5 {
		return "", fmt.Errorf("post the reply: %d ids in a row taken by other messages", clashes+1)
	}
	renewed, _, err := w.claims.RenewReply(e.Channel, e.Message, id, channel.NewID(w.cfg.Agent, w.now(), randhex.String(2)))
	if err != nil {
		return "", fmt.Errorf("renew the reply's id: %w", err)
	}
	w.log.Info("reply id taken by another message; renewed", keyMsg, e.Message, keyTaken, id, keyReply, renewed)
	return renewed, nil
}

// outboxFailed schedules the next attempt: Poll after the first failure,
// doubling up to 32×Poll.
func (w *watcher) outboxFailed() {
	w.outbox.fails++
	w.outbox.next = w.now().Add(w.cfg.Poll << min(w.outbox.fails-1, 5))
}

// retryOutbox posts what waits in the outbox, oldest first, if the back-off
// allows (or force). It stops at the first failure: the rest would meet the
// same full disk.
func (w *watcher) retryOutbox(force bool) {
	if len(w.outbox.entries) == 0 || (!force && w.now().Before(w.outbox.next)) {
		return
	}
	for _, e := range slices.Clone(w.outbox.entries) {
		if !e.durable {
			if err := w.persist(e); err == nil {
				w.log.Info("reply kept in memory is now on disk", keyMsg, e.Message, keyFile, e.file())
			}
		}
		id, err := w.deliver(e)
		if err != nil {
			w.outboxFailed()
			w.logOnce("outbox", "cannot post replies from the outbox; retrying", keyWaiting, len(w.outbox.entries),
				keyAttempts, w.outbox.fails, keyNext, w.outbox.next, keyErr, err)
			return
		}
		w.drop(e)
		if id == "" {
			continue
		}
		now := w.now()
		w.log.Info("replied from the outbox", keyMsg, e.Message, keyChannel, e.Channel, keyReply, id, keyWaited, now.Sub(e.Created))
		if e.Status == claim.Replied {
			w.handled++
			w.lastReply, w.lastReplyID = now, id
			w.guards.replied(e.From, e.Hops, now)
		}
	}
	w.outbox.fails = 0
}

// closeOutbox makes a last attempt at shutdown and says what is left.
func (w *watcher) closeOutbox() {
	w.retryOutbox(true)
	var durable, memory []string
	for _, e := range w.outbox.entries {
		if !e.durable && w.persist(e) != nil {
			memory = append(memory, e.Message)
		} else {
			durable = append(durable, e.Message)
		}
	}
	if len(durable) > 0 {
		w.log.Warn("replies left in the outbox; posted at the next start", keyMessages, durable, keyFile, w.outboxPath())
	}
	if len(memory) > 0 {
		w.log.Error("replies lost: no room to keep them on disk", keyMessages, memory)
	}
}

// requeue queues messages of the watcher's channels whose outbox entry was
// lost, unless already queued.
func (w *watcher) requeue(refs []ref) {
	for _, r := range refs {
		if !slices.Contains(w.cfg.Channels, r.Channel) || slices.ContainsFunc(w.queue, func(it *item) bool { return it.ref() == r }) {
			continue
		}
		m, err := channel.Lookup(w.cfg.Root, r.Channel, r.ID)
		if err != nil {
			w.log.Warn("message of a lost outbox entry gone", keyMsg, r.ID, keyChannel, r.Channel, keyErr, err)
			continue
		}
		m.SessionID, m.ID = r.Channel, m.Key()
		if it := (&item{msg: m}); w.admit(it) {
			w.queue = append(w.queue, it)
		}
	}
}

// cut shortens text to at most n bytes, on a UTF-8 boundary, and says so.
func cut(text string, n int) string {
	note := fmt.Sprintf("\n[… cut by collab: the output was %d bytes]", len(text))
	n = max(n-len(note), 0)
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n] + note
}
