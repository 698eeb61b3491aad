package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// permissionDenied (scenario 5): the watcher meets EACCES on a message, on
// the channel folder and on its state folder, in turn. Each must give a
// clear log line (once, not once per poll), never end the watcher, and
// every message must be answered exactly once when the permission is put
// back. Run as root, the watcher is started without CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH (setpriv), so file modes bind it as they bind any
// user.
func permissionDenied(ctx context.Context, e *env) error {
	per := e.size(6, 3)
	w, err := e.startWatcher(ctx, watchOpts{root: e.backing, noDAC: true}, true)
	if err != nil {
		return err
	}
	root := tree.Root(e.backing)
	hold := 3 * time.Second // several polls with the permission missing

	// A: unreadable messages, published whole with mode 000.
	if err := unreadableMessages(ctx, e, w, per, hold); err != nil {
		return err
	}
	// B: the channel folder cannot be listed.
	if err := deniedFolder(ctx, e, root.Channel(chanName), "s5 folder denied", per, hold); err != nil {
		return err
	}
	if n := countLines(w.log, "cannot scan channel", "permission denied"); n < 1 || n > 2 {
		e.problem("the unlistable channel folder was logged %d times, want once", n)
	}
	// C: the watcher's state folder cannot be written or read.
	if err := deniedFolder(ctx, e, root.State(agent), "s5 state denied", per, hold); err != nil {
		return err
	}
	if n := countLines(w.log, "permission denied"); n == 0 {
		e.problem("no log line says permission denied")
	}
	e.note("%d log lines name a permission denied", countLines(w.log, "permission denied"))
	if err := e.await(ctx, 40*time.Second, 2*time.Second); err != nil {
		return err
	}
	// A restart must not answer anything twice, whatever state was saved.
	return e.restartWatcherWith(ctx, watchOpts{root: e.backing, noDAC: true}, 2*time.Second)
}

// unreadableMessages sends per readable messages and links per messages
// of mode 000 into the channel, waits hold, checks that each unreadable one
// was logged once, and makes them readable.
func unreadableMessages(ctx context.Context, e *env, w *watchProc, per int, hold time.Duration) error {
	chDir := tree.Root(e.backing).Channel(chanName)
	staging := tree.Root(filepath.Join(e.dir, "staging"))
	sw := &channel.Writer{Root: staging}
	var denied []string
	for i := range per {
		if _, err := e.send(ctx, e.backing, sender, fmt.Sprintf("s5 readable %d", i)); err != nil {
			return err
		}
		m := &channel.Message{From: sender, SessionID: chanName, To: agent}
		m.Content.Text = fmt.Sprintf("s5 unreadable %d", i)
		if err := sw.Post(m); err != nil {
			return err
		}
		name := m.ID + ".json"
		src := filepath.Join(staging.Channel(chanName), name)
		if err := os.Chmod(src, 0); err != nil {
			return err
		}
		if err := os.Link(src, filepath.Join(chDir, name)); err != nil {
			return err
		}
		e.acks.add(ack{ID: m.ID, Text: m.Content.Text, At: time.Now()})
		denied = append(denied, name)
	}
	if err := sleep(ctx, hold); err != nil {
		return err
	}
	for _, name := range denied {
		if n := countLines(w.log, name, "permission denied"); n != 1 {
			e.problem("unreadable message %s logged %d times, want once", name, n)
		}
		if err := os.Chmod(filepath.Join(chDir, name), 0o644); err != nil {
			return err
		}
	}
	e.heal()
	return nil
}

// deniedFolder takes every permission off dir, sends per messages (text
// and a number), waits hold and gives dir mode 0755 back.
func deniedFolder(ctx context.Context, e *env, dir, text string, per int, hold time.Duration) error {
	if err := os.Chmod(dir, 0); err != nil {
		return err
	}
	for i := range per {
		if _, err := e.send(ctx, e.backing, sender, fmt.Sprintf("%s %d", text, i)); err != nil {
			os.Chmod(dir, 0o755)
			return err
		}
	}
	err := sleep(ctx, hold)
	os.Chmod(dir, 0o755)
	e.heal()
	return err
}

// countLines counts the lines of a log file that contain every one of subs.
func countLines(path string, subs ...string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
next:
	for sc.Scan() {
		for _, s := range subs {
			if !strings.Contains(sc.Text(), s) {
				continue next
			}
		}
		n++
	}
	return n
}
