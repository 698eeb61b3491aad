package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Unread counts: each signed-in person has a "last seen" cursor per
// channel: the ids of the messages of the newest second the page showed
// them there (names carry the time to the second only, so the second's
// ids, at most maxSeen, say which of its messages were shown). The
// cursors of person P live in ROOT/state/P/web-seen.json (the state
// folder of the name P posts as), {"seen": {CHANNEL:
// [ID, ...]}}, replaced atomically (temp, fsync, rename, dir fsync); a
// cursor only moves forward. Viewing a channel's page moves it to the
// page's newest messages, and each message its event stream shows moves
// it on. The inbox package's cursors are not reused: they are an agent's
// delivery position (what it was handed), not what a person looked at.
//
// A channel's unread count is the names another sender wrote that are
// after the cursor's second or in it but not among its ids, counted from
// the folder listing alone (no message is read) and shown capped at
// maxUnread ("99+"). A name older than the cursor that appears late (a
// writer with a slow clock) is not counted. A channel never viewed
// counts from its start.

// maxUnread is the largest unread count shown; beyond it the list says
// "99+".
const maxUnread = 99

// seenFile is the file of a person's cursors in the person's state folder.
const seenFile = "web-seen.json"

// seenMu serializes the read-modify-replace of cursor files within this
// process; two servers on one tree may lose one another's move (the page
// moves it again at the next view).
var seenMu sync.Mutex

type seenState struct {
	Seen map[string][]string `json:"seen"`
}

func seenPath(root tree.Root, person string) string { return root.State(person) }

// loadSeen reads person's cursors; a missing file has none.
func loadSeen(root tree.Root, person string) (seenState, error) {
	st := seenState{Seen: map[string][]string{}}
	d, err := safedir.Open(seenPath(root, person))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("open seen cursors: %w", err)
	}
	defer d.Close()
	data, _, err := d.ReadFile(seenFile, 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read seen cursors: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return seenState{Seen: map[string][]string{}}, fmt.Errorf("read seen cursors of %s: %w", person, err)
	}
	if st.Seen == nil {
		st.Seen = map[string][]string{}
	}
	return st, nil
}

// cursorSecond is the second of a cursor's ids and the ids; ok is false
// for an empty or unreadable cursor.
func cursorSecond(ids []string) (top time.Time, set map[string]bool, ok bool) {
	set = map[string]bool{}
	for _, id := range ids {
		if n, err := channel.ParseID(id); err == nil {
			top, ok = n.Time, true
			set[id] = true
		}
	}
	return top, set, ok
}

// markSeen moves person's cursor in ch on to ids, the ids of messages
// shown of one second (the newest shown): a newer second replaces the
// cursor, the same second adds to it (at most maxSeen), an older one
// leaves it.
func markSeen(root tree.Root, person, ch string, ids ...string) error {
	top, _, ok := cursorSecond(ids)
	if !ok {
		return errors.New("no message id to mark seen")
	}
	if err := tree.CheckName("person", person); err != nil {
		return err
	}
	seenMu.Lock()
	defer seenMu.Unlock()
	st, err := loadSeen(root, person)
	if err != nil {
		st = seenState{Seen: map[string][]string{}} // unreadable: start again
	}
	old := st.Seen[ch]
	oldTop, oldSet, had := cursorSecond(old)
	var next []string
	switch {
	case !had || top.After(oldTop):
		next = nil
	case top.Equal(oldTop):
		next = old
	default:
		return nil
	}
	added := false
	for _, id := range ids {
		if n, err := channel.ParseID(id); err == nil && n.Time.Equal(top) && !oldSet[id] && len(next) < maxSeen {
			next = append(next, id)
			added = true
			oldSet[id] = true
		}
	}
	if !added && had && top.Equal(oldTop) {
		return nil
	}
	st.Seen[ch] = next
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	d, err := safedir.Create(seenPath(root, person))
	if err != nil {
		return fmt.Errorf("seen cursors: %w", err)
	}
	defer d.Close()
	if err := d.Replace(seenFile, data, 0o644); err != nil {
		return fmt.Errorf("seen cursors: %w", err)
	}
	return nil
}

// seenThrough reports whether the message id is within cursor: in its
// second and among its ids, or older.
func seenThrough(cursor []string, id string) bool {
	top, set, ok := cursorSecond(cursor)
	n, err := channel.ParseID(id)
	if !ok || err != nil {
		return false
	}
	return n.Time.Before(top) || (n.Time.Equal(top) && set[id])
}

// unread counts the names in ch after cursor (nil: from the start) that
// another sender than person wrote, at most maxUnread+1. It lists the
// folder and reads no message (channel.Newest's keep refuses every name).
func unread(root tree.Root, ch, person string, cursor []string) int {
	top, set, hasCur := cursorSecond(cursor)
	count := 0
	keep := func(name string, nm channel.Name) bool {
		if count > maxUnread || nm.Agent == person || !hasCur {
			if count <= maxUnread && nm.Agent != person {
				count++
			}
			return false
		}
		if nm.Time.After(top) || (nm.Time.Equal(top) && !set[strings.TrimSuffix(name, ".json")]) {
			count++
		}
		return false
	}
	_, _, _, _ = channel.Newest(root, ch, 1, keep, nil)
	return count
}
