package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// diskFull (scenario 4): the tree is a small tmpfs. Messages arrive, then
// the disk is filled while the stand-in model is still thinking, so the
// reply, the job record, the state and the presence heartbeat all meet
// ENOSPC. The heartbeat file must stay whole throughout; space then
// returns and every reply must be posted exactly once. One round stops the
// watcher while the disk is full and starts it again after space returns:
// replies kept on disk in the outbox are posted at the next start.
func diskFull(ctx context.Context, e *env) error {
	mnt := filepath.Join(e.dir, "small")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=16m,mode=0755"); err != nil {
		return errSkip{why: fmt.Sprintf("cannot mount a small tmpfs (needs root): %v", err)}
	}
	e.mu.Lock()
	e.mounts = append(e.mounts, mnt)
	e.mu.Unlock()
	e.backing = filepath.Join(mnt, "tree")
	if err := os.MkdirAll(tree.Root(e.backing).Channel(chanName), 0o755); err != nil {
		return err
	}
	o := watchOpts{root: e.backing, delay: 1500 * time.Millisecond, heartbeat: time.Second} // collab watch's minimum
	if _, err := e.startWatcher(ctx, o, true); err != nil {
		return err
	}
	rounds, per := e.size(4, 2), e.size(5, 3)
	filler := filepath.Join(mnt, "filler")
	presencePath := filepath.Join(tree.Root(e.backing).Presence(), agent+".json")
	broken, checks := 0, 0
	for round := range rounds {
		for i := range per {
			if _, err := e.send(ctx, e.backing, sender, fmt.Sprintf("s4 round %d message %d", round+1, i+1)); err != nil {
				return err
			}
		}
		if err := fill(filler); err != nil {
			return err
		}
		restart := round == rounds-1
		if restart {
			// Stopped while the disk is full: the replies it could not post
			// wait in the outbox (or, if even that was full, are reported
			// lost in the log and answered again by the next start).
			if err := sleep(ctx, 2*time.Second); err != nil {
				return err
			}
			e.stopWatchers()
		}
		// Several heartbeats and the CLI's replies meet the full disk.
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
			checks++
			if err := wholePresence(presencePath); err != nil {
				broken++
				e.problem("presence file broken while the disk was full: %v", err)
			}
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return err
			}
		}
		if err := os.Remove(filler); err != nil {
			return err
		}
		e.heal()
		if restart {
			if _, err := e.startWatcher(ctx, o, true); err != nil {
				return err
			}
			e.heal()
		}
		if err := e.await(ctx, 30*time.Second, 0); err != nil {
			return err
		}
	}
	e.note("%d presence reads while the disk was full, %d broken", checks, broken)
	return sleep(ctx, 2*time.Second)
}

// outboxLogged checks scenario 4's watcher log once the watchers stopped: a
// reply that could not be posted must have been kept in the outbox
// (watcher/outbox.go) and posted from it when space returned, so the log
// must show at least one "replied from the outbox" and no "replies lost: no
// room to keep them on disk" (a reply only in memory when the watcher
// stopped).
func outboxLogged(e *env) {
	const (
		lost   = "replies lost: no room to keep them on disk"
		posted = "replied from the outbox"
	)
	counts := make(map[string]int)
	var lostLines []string
	err := logLines(e, func(l logLine) {
		switch l.Msg {
		case lost:
			lostLines = append(lostLines, clip(string(l.raw), 300))
			counts[l.Msg]++
		case posted,
			"cannot post the reply; kept in the outbox and retried",
			"cannot post the reply nor keep it on disk; kept in memory and retried (lost if the watcher stops first)",
			"reply kept in memory is now on disk",
			"replies left in the outbox; posted at the next start",
			"replies waiting in the outbox":
			counts[l.Msg]++
		}
	})
	if err != nil {
		e.problem("watcher log: %v", err)
		return
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%q %d", k, counts[k]))
	}
	e.note("outbox in the watcher log: %s", strings.Join(parts, ", "))
	for _, l := range lostLines {
		e.problem("a reply was lost for want of disk space: %s", l)
	}
	if counts[posted] == 0 {
		e.problem("no reply was posted from the outbox: the full disk never held a reply back, or the outbox never posted it")
	}
}

// fill writes a file until the filesystem is full.
func fill(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				// Also use up the last partial block.
				for n := len(buf) / 2; n > 0; n /= 2 {
					f.Write(buf[:n])
				}
				return nil
			}
			return err
		}
	}
}

// wholePresence reads a presence file and checks that it parses.
func wholePresence(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if _, err := presence.Decode(data, agent); err != nil {
		return fmt.Errorf("%v (%d bytes)", err, len(data))
	}
	return nil
}

// stopWatchers stops every watcher of the scenario with SIGTERM; one that
// does not stop is a problem.
func (e *env) stopWatchers() {
	e.mu.Lock()
	ws := append([]*watchProc(nil), e.watchers...)
	e.mu.Unlock()
	for _, w := range ws {
		if !w.terminate(15 * time.Second) {
			e.problem("watcher %s did not stop on SIGTERM", w.label)
		}
	}
}

// corruptState (scenario 11): between runs of the watcher, its state file
// is truncated, bit-flipped, emptied or replaced by garbage while messages
// keep arriving. Each start must detect it (and set the bad file aside),
// answer what arrived meanwhile, and answer nothing twice: the replies
// already in the channel prove what was answered.
func corruptState(ctx context.Context, e *env) error {
	per := e.size(8, 4)
	stateFile := e.statePath()
	corruptions := []struct {
		name string
		do   func(data []byte) []byte
	}{
		{"truncated to half", func(d []byte) []byte { return d[:len(d)/2] }},
		{"one bit flipped", func(d []byte) []byte {
			d = append([]byte(nil), d...)
			i := e.rng.IntN(len(d))
			d[i] ^= 1 << e.rng.IntN(8)
			return d
		}},
		{"emptied", func([]byte) []byte { return nil }},
		{"garbage", func([]byte) []byte { return []byte("\x00\xff{not json") }},
	}
	o := watchOpts{root: e.backing}
	if _, err := e.startWatcher(ctx, o, true); err != nil {
		return err
	}
	detected := 0
	for round, c := range corruptions {
		for i := range per {
			if _, err := e.send(ctx, e.backing, sender, fmt.Sprintf("s11 round %d message %d", round+1, i+1)); err != nil {
				return err
			}
		}
		if err := e.await(ctx, 30*time.Second, 0); err != nil {
			return err
		}
		e.stopWatchers()
		data, err := os.ReadFile(stateFile)
		if err != nil {
			return fmt.Errorf("round %d: %w", round+1, err)
		}
		if err := os.WriteFile(stateFile, c.do(data), 0o644); err != nil {
			return err
		}
		// Messages while the watcher is down, before and after its
		// last-known position.
		for i := range per {
			if _, err := e.send(ctx, e.backing, sender, fmt.Sprintf("s11 round %d while down %d", round+1, i+1)); err != nil {
				return err
			}
		}
		w, err := e.startWatcher(ctx, o, true)
		if err != nil {
			return err
		}
		e.heal()
		if countLines(w.log, "state unreadable") > round {
			detected++
		} else {
			e.problem("state %s: not detected", c.name)
		}
	}
	if err := e.await(ctx, 30*time.Second, 2*time.Second); err != nil {
		return err
	}
	aside, _ := filepath.Glob(stateFile + ".corrupt-*")
	e.note("%d of %d corruptions detected; %d bad state files set aside", detected, len(corruptions), len(aside))
	if len(aside) == 0 {
		e.problem("no corrupt state file was kept aside")
	}
	return nil
}

// presenceRewrites (scenario 7, second part): the heartbeat of "carol", an
// agent AWAKE on another host, is rewritten in place every 200 to 400 ms,
// with a fresh timestamp, the way a foreign writer makes a reader meet a
// short file: truncated, then the first half written, 50 ms later the
// second half. Meanwhile `collab who --check carol` runs in a loop on two
// other mounts, in turn:
//
//   - root, a mount that revalidates attributes at each open
//     (attr_timeout=0, as an NFS mount with close-to-open consistency,
//     the default, does): it sees the short file only while it is short;
//     every check there must exit 0, the short reads being retried;
//   - cached, the watcher's mount with a 20 s attribute cache (an NFS
//     mount with nocto and a long actimeo): a short read makes the kernel
//     keep the short size until the cache expires, longer than any retry
//     waits, so failures there are counted and noted, as a limit, not a
//     failure of the run.
//
// It runs until stop closes.
func presenceRewrites(ctx context.Context, e *env, root, cached string, stop <-chan struct{}) error {
	const who = "carol"
	st := presence.Status{AgentID: who, State: presence.StateAwake, Substate: presence.SubIdle,
		WatcherPID: os.Getpid(), Channel: chanName, Host: "host-c"}
	if err := presence.Write(tree.Root(e.backing), st); err != nil {
		return err
	}
	rw := &rewriter{path: filepath.Join(tree.Root(e.backing).Presence(), who+".json"), st: st}
	writerDone := make(chan error, 1)
	go func() { writerDone <- rw.run(ctx, newRng(e), stop) }()
	var on [2]whoTally // root, cached
	rng := newRng(e)
	for k := 0; ; k++ {
		select {
		case <-stop:
		default:
			if err := on[k%2].check(ctx, e, []string{root, cached}[k%2], who, rw); err != nil {
				return err
			}
			if err := sleep(ctx, between(rng, 0, 30*time.Millisecond)); err != nil {
				return err
			}
			continue
		}
		break
	}
	if err := <-writerDone; err != nil {
		return fmt.Errorf("presence rewriter: %w", err)
	}
	c, a := on[0], on[1]
	e.note("presence of %s rewritten in place %d times (truncate, half, 50 ms, half); `collab who --check %s` on a mount revalidating at open: %d checks, %d while the file was short, %d failed",
		who, rw.rewrites(), who, c.checks, c.overlapping, c.failed)
	e.note("limit: on the mount with a 20 s attribute cache, %d of %d checks failed (%d while the file was short): the kernel keeps a short read's size until the cache expires; first: %s",
		a.failed, a.checks, a.overlapping, clip(cmpOr(a.first, "none"), 200))
	if c.failed > 0 {
		e.problem("`collab who --check %s` failed %d of %d times while its heartbeat was rewritten in place (a short read not retried); first: %s",
			who, c.failed, c.checks, clip(c.first, 300))
	}
	if c.overlapping == 0 {
		e.problem("no presence check ran while the file was short: the presence part tested nothing")
	}
	return nil
}

// rewriter rewrites a presence file in place, not atomically, every
// 200-400 ms: truncate, 20 ms, half, 50 ms, the other half. It keeps the
// windows in which the file was short.
type rewriter struct {
	path string
	st   presence.Status

	mu      sync.Mutex
	windows [][2]time.Time // when the file was short; the end zero until known
}

// run rewrites until stop closes or ctx ends.
func (rw *rewriter) run(ctx context.Context, rng *rand.Rand, stop <-chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(between(rng, 200*time.Millisecond, 400*time.Millisecond)):
		}
		if err := rw.rewrite(); err != nil {
			return err
		}
	}
}

func (rw *rewriter) rewrite() error {
	rw.st.Timestamp = presence.FormatTime(time.Now())
	data, err := rw.st.Encode()
	if err != nil {
		return err
	}
	rw.mu.Lock()
	rw.windows = append(rw.windows, [2]time.Time{time.Now()}) // the end when known
	k := len(rw.windows) - 1
	rw.mu.Unlock()
	f, err := os.OpenFile(rw.path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	time.Sleep(20 * time.Millisecond)
	_, err1 := f.Write(data[:len(data)/2])
	time.Sleep(50 * time.Millisecond)
	_, err2 := f.Write(data[len(data)/2:])
	err3 := f.Close()
	rw.mu.Lock()
	rw.windows[k][1] = time.Now()
	rw.mu.Unlock()
	return errors.Join(err1, err2, err3)
}

// shortDuring reports whether the file was short at some time between t0
// and t1 (looking at the last three rewrites).
func (rw *rewriter) shortDuring(t0, t1 time.Time) bool {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	for i := len(rw.windows) - 1; i >= 0 && i >= len(rw.windows)-3; i-- {
		if w := rw.windows[i]; (w[1].IsZero() || t0.Before(w[1])) && t1.After(w[0]) {
			return true
		}
	}
	return false
}

func (rw *rewriter) rewrites() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return len(rw.windows)
}

// whoTally counts the `collab who --check` runs on one mount.
type whoTally struct {
	checks, failed, overlapping int
	first                       string // the first failure
}

// check runs `collab who --check who` on mount once and counts it.
func (t *whoTally) check(ctx context.Context, e *env, mount, who string, rw *rewriter) error {
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, e.h.collab, "who", "--root", mount, "--check", who)
	cmd.Env = childEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	t1 := time.Now()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	t.checks++
	if rw.shortDuring(t0, t1) {
		t.overlapping++
	}
	if err != nil {
		t.failed++
		if t.first == "" {
			t.first = fmt.Sprintf("%v: %s", err, bytes.TrimSpace(stderr.Bytes()))
		}
	}
	return nil
}
