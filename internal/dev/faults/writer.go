package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// killedWriters (scenario 1): `collab send` processes posting large
// messages are SIGKILLed at random points, many of them in the middle of
// writing the temp file. Meanwhile a reader reads every visible message
// file the moment it appears: none may ever be partial. The watcher
// answers every acked message once. The temp files the killed writers left
// behind must survive the watcher's janitor while they are young and be
// removed once they are older than the orphan age.
func killedWriters(ctx context.Context, e *env) error {
	n := e.size(120, 40)
	if _, err := e.startWatcher(ctx, watchOpts{root: e.backing}, true); err != nil {
		return err
	}
	dir := tree.Root(e.backing).Channel(chanName)
	stopReader := make(chan struct{})
	var readerWG sync.WaitGroup
	readerWG.Add(1)
	var partial []string
	var checked int
	go func() {
		defer readerWG.Done()
		partial, checked = watchWhole(dir, stopReader)
	}()

	killed, acked := 0, 0
	for i := range n {
		// 64 KiB to 768 KiB of text: writing and fsyncing it takes long
		// enough that many kills land mid-write.
		size := 64<<10 + e.rng.IntN(704<<10)
		text := fmt.Sprintf("s1 message %d of %d ", i+1, n) + strings.Repeat(string(rune('a'+i%26)), size)
		killAfter := between(e.rng, 0, 25*time.Millisecond)
		ok, err := e.sendKilled(ctx, text, killAfter)
		if err != nil {
			close(stopReader)
			readerWG.Wait()
			return err
		}
		if ok {
			acked++
		} else {
			killed++
		}
	}
	close(stopReader)
	readerWG.Wait()
	for _, p := range partial {
		e.problem("a partial message was visible: %s", p)
	}
	if acked == 0 {
		e.problem("no send survived: the scenario checked no reply")
	}
	if err := e.await(ctx, 60*time.Second, time.Second); err != nil {
		return err
	}
	// The orphans are the killed senders' temp files, counted once the
	// replies are written: a temp file of a reply the watcher is still
	// writing is not one (counted, it went away by itself and looked
	// swept by the janitor).
	orphans, err := tempFiles(dir)
	if err != nil {
		return err
	}
	orphans = slices.DeleteFunc(orphans, func(name string) bool { return strings.Contains(name, "-"+agent+"-") })
	e.note("%d sends killed, %d acked; %d message files read whole as they appeared; %d temp files left", killed, acked, checked, len(orphans))
	return checkOrphanSweep(ctx, e, dir, orphans)
}

// checkOrphanSweep checks the watcher's janitor on the temp files of the
// channel folder dir: at a restart, young ones (orphans, or one planted if
// there are none) stay; aged past 36 h, the next restart removes them.
func checkOrphanSweep(ctx context.Context, e *env, dir string, orphans []string) error {
	if len(orphans) == 0 {
		// No kill landed mid-write this time: leave one the way a killed
		// writer does, so the janitor's age rule is still tested.
		name := ".msg-20990101-000000-alice-0000.json.dead.tmp"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(`{"id":"msg-2099`), 0o644); err != nil {
			return err
		}
		orphans = []string{name}
		e.note("no kill landed mid-write; planted one orphan temp file")
	}
	// A restart runs the janitor at once: young orphans must stay.
	if err := e.restartWatcher(ctx); err != nil {
		return err
	}
	if err := sleep(ctx, time.Second); err != nil {
		return err
	}
	left, err := tempFiles(dir)
	if err != nil {
		return err
	}
	if len(left) < len(orphans) {
		e.problem("the janitor removed %d young temp files (under 36 h old)", len(orphans)-len(left))
	}
	// Age them past 36 h: the next sweep (at the next start) removes them.
	old := time.Now().Add(-37 * time.Hour)
	for _, name := range left {
		os.Chtimes(filepath.Join(dir, name), old, old)
	}
	if err := e.restartWatcher(ctx); err != nil {
		return err
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		left, err = tempFiles(dir)
		if err != nil {
			return err
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			e.problem("%d orphan temp files older than 36 h were not removed", len(left))
			break
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// sendKilled runs `collab send` with text on standard input and SIGKILLs
// it after killAfter unless it has finished. It reports whether the send
// returned an id (an ack, added to the ledger).
func (e *env) sendKilled(ctx context.Context, text string, killAfter time.Duration) (bool, error) {
	cmd := exec.CommandContext(ctx, e.h.collab, "send", "--root", e.backing, "--agent", sender,
		"--channel", chanName, "--to", agent, "--text", "-")
	cmd.Env = childEnv()
	cmd.Stdin = strings.NewReader(text)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return false, err
	}
	t := time.AfterFunc(killAfter, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	t.Stop()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && !ee.Exited() {
			return false, nil // killed
		}
		return false, fmt.Errorf("collab send: %v: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	a := ack{ID: strings.TrimSpace(stdout.String()), Text: text, At: time.Now()}
	if _, err := channel.ParseID(a.ID); err != nil {
		return false, fmt.Errorf("collab send printed %q: %v", a.ID, err)
	}
	e.acks.add(a)
	return true, nil
}

// restartWatcher stops the scenario's watchers with SIGTERM and starts one
// again on the backing tree.
func (e *env) restartWatcher(ctx context.Context) error {
	return e.restartWatcherWith(ctx, watchOpts{root: e.backing}, 0)
}

// restartWatcherWith stops the scenario's watchers with SIGTERM, starts one
// with o and lets it run for settle (time to answer something twice).
func (e *env) restartWatcherWith(ctx context.Context, o watchOpts, settle time.Duration) error {
	e.stopWatchers()
	if _, err := e.startWatcher(ctx, o, true); err != nil {
		return err
	}
	return sleep(ctx, settle)
}

// watchWhole reads every message file in dir as soon as it is listed, until
// stop closes, and returns those that did not decode (a partial message
// made visible) and how many were read.
func watchWhole(dir string, stop <-chan struct{}) (partial []string, checked int) {
	seen := make(map[string]bool)
	for {
		select {
		case <-stop:
			return partial, checked
		default:
		}
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			partial = append(partial, "listing: "+err.Error())
			return partial, checked
		}
		for _, ent := range ents {
			name := ent.Name()
			if seen[name] || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
				continue
			}
			seen[name] = true
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				partial = append(partial, name+": "+err.Error())
				continue
			}
			checked++
			if _, err := channel.Decode(data, name, chanName); err != nil {
				partial = append(partial, fmt.Sprintf("%s (%d bytes): %v", name, len(data), err))
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// tempFiles lists the temp files in dir.
func tempFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ent := range ents {
		if safedir.IsTemp(ent.Name()) {
			names = append(names, ent.Name())
		}
	}
	return names, nil
}
