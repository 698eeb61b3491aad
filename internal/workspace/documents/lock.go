package documents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"syscall"
	"time"

	"github.com/collabdev/collab/internal/plumbing/randhex"
)

// lockInfo is the content of a lock file.
type lockInfo struct {
	Token string    `json:"token"`
	Host  string    `json:"host"`
	PID   int       `json:"pid"`
	Time  time.Time `json:"time"` // the holder's clock; for people only
}

const maxLockFile = 4 << 10

// heldLock is a lock this process holds.
type heldLock struct {
	r     *os.Root
	name  string
	token string
}

// lock takes the lock of file (see the package doc), waiting while a live
// writer holds it and taking it over once it is stale.
func (f *Folder) lock(ctx context.Context, r *os.Root, file string) (*heldLock, error) {
	name := sibling(file, ".lock")
	me := lockInfo{Token: randhex.String(8), Host: f.opt.Host, PID: os.Getpid(), Time: time.Now().UTC()}
	data, err := json.Marshal(me)
	if err != nil {
		return nil, err
	}
	own := name + "." + me.Token
	// A lock need not survive a crash: no fsync.
	if err := writeNew(r, own, data, false); err != nil {
		return nil, fmt.Errorf("lock %s: %w", file, err)
	}
	defer r.Remove(own)
	ownInfo, err := r.Lstat(own)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", file, err)
	}
	held := &heldLock{r: r, name: name, token: me.Token}
	start := time.Now()
	var watched string // the holder's token we are watching
	var watchedSince time.Time
	delay := 2 * time.Millisecond
	for {
		err := r.Link(own, name)
		switch {
		case err == nil:
			return held, nil
		case errors.Is(err, fs.ErrExist) && linkCount(r, own) >= 2:
			return held, nil // linked, but the NFS reply was lost
		case noLinks(err):
			if err = writeNew(r, name, data, false); err == nil {
				return held, nil
			}
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", file, err)
		}
		holder, info, err := readLock(r, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", file, err)
		}
		if holder.Token == me.Token {
			return held, nil // ours: the link count was cached
		}
		now := time.Now()
		if holder.Token != watched || watchedSince.IsZero() {
			watched, watchedSince = holder.Token, now
		}
		// Age on the server's clock when we started, plus what we watched.
		age := ownInfo.ModTime().Sub(info.ModTime()) + now.Sub(watchedSince)
		if age > f.opt.LockStale {
			takeOver(r, name, holder.Token)
			continue
		}
		if now.Sub(start) > f.opt.LockWait {
			return nil, fmt.Errorf("%w: %s, by %s pid %d since %s", ErrLockBusy, file, holder.Host, holder.PID, holder.Time.Format(time.RFC3339))
		}
		t := time.NewTimer(delay/2 + rand.N(delay))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("lock %s: %w", file, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// takeOver removes the stale lock name if it still holds token. The lock
// is renamed aside first, so of several waiters exactly one moves it; one
// that moved a fresh lock by mistake links it back.
func takeOver(r *os.Root, name, token string) {
	aside := name + "." + randhex.String(8) + ".stale"
	if err := r.Rename(name, aside); err != nil {
		return // gone already: another waiter took it over, or it was released
	}
	if got, _, _ := readLock(r, aside); got.Token != token {
		r.Link(aside, name) // not the one we judged: give it back
	}
	r.Remove(aside)
}

// verify reports whether the lock is still ours.
func (l *heldLock) verify() error {
	got, _, err := readLock(l.r, l.name)
	if err != nil || got.Token != l.token {
		return ErrLockLost
	}
	return nil
}

// unlock releases the lock if it is still ours.
func (l *heldLock) unlock() {
	aside := l.name + "." + randhex.String(8) + ".done"
	if err := l.r.Rename(l.name, aside); err != nil {
		return
	}
	if got, _, _ := readLock(l.r, aside); got.Token != l.token {
		l.r.Link(aside, l.name) // taken over: not ours to remove
	}
	l.r.Remove(aside)
}

// readLock reads a lock file. A file being written (empty or cut short) has
// an empty token.
func readLock(r *os.Root, name string) (lockInfo, fs.FileInfo, error) {
	data, fi, err := readFile(r, name, maxLockFile)
	if err != nil && !errors.Is(err, ErrTooLarge) {
		return lockInfo{}, fi, err
	}
	var li lockInfo
	json.Unmarshal(data, &li) // a bad lock has no token and ages like any other
	return li, fi, nil
}

func linkCount(r *os.Root, name string) uint64 {
	fi, err := r.Lstat(name)
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}
