package main

// Scenarios 21 and 22: back within 5 s. The agent is served only by
// `collab watch --remote` (poll 1 s, the default) through one bridge; a
// writer on the mount posts 20 messages while the bridge (21) or the
// nats-server (22) is SIGKILLed for 2 s (the first message being
// claimed through the bridge), then it is restarted (the
// server on its port and store). Every message must be answered, its
// reply on the mount, within 5 s of the process coming back (logged
// "serving" for a bridge, ready for the server). Scored by claimVerdict.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// backWithin is the target: every message answered within this long of
// the bridge or NATS node coming back.
const backWithin = 5 * time.Second

// backIn5 returns scenario 21 (what "bridge") or 22 ("nats").
func backIn5(what string) func(ctx context.Context, e *env) error {
	return func(ctx context.Context, e *env) error {
		r, err := newRemoteRun(ctx, e, 0)
		if err != nil {
			return err
		}
		defer r.close()
		r.level = "debug" // "bridge: claimfs" is a debug record
		key, err := agentKey(e)
		if err != nil {
			return err
		}
		if err := r.startBridge(ctx, "bridge"); err != nil {
			return err
		}
		// A fast model: the time is the recovery's, not the model's.
		base := watchOpts{jitter: 20 * time.Millisecond, poll: time.Second, env: []string{"COLLAB_KEY=" + key}}
		if _, err := e.startWatcher(ctx, remoteWatch(base, r, r.url), true); err != nil {
			return err
		}
		tag := "s21"
		if what == "nats" {
			tag = "s22"
		}
		// Warm: a few answered before the fault.
		if err := postAll(ctx, e, tag+" before", 3, 100*time.Millisecond, 200*time.Millisecond); err != nil {
			return err
		}
		if err := e.await(ctx, 30*time.Second, 0); err != nil {
			return err
		}
		before := e.acks.snapshot()
		// The fault strikes mid-flow: the first of the 20 messages is
		// being claimed through the bridge (its debug line "bridge:
		// claimfs") when the bridge or the server is SIGKILLed; the rest
		// land while it is down.
		down := 2 * time.Second
		follow, err := followLog(r.bridges["bridge"].log, fileSize(r.bridges["bridge"].log))
		if err != nil {
			return err
		}
		sent, sendErr := postSpaced(ctx, e, tag+" around the kill", 20, 60*time.Millisecond, 100*time.Millisecond)
		ok, err := follow.until(ctx, 3*time.Second, nil, "bridge: claimfs")
		follow.close()
		if err != nil {
			return err
		}
		switch what {
		case "bridge":
			if _, err := r.killBridge(ctx, "bridge", false); err != nil {
				return err
			}
		case "nats":
			r.nats.kill()
		}
		killed := time.Now()
		e.logf("%s SIGKILLed for %v (mid-claim: %v)", what, down, ok)
		<-sent
		if err := sendErr(); err != nil {
			return err
		}
		if err := sleep(ctx, time.Until(killed.Add(down))); err != nil {
			return err
		}
		switch what {
		case "bridge":
			err = r.startBridge(ctx, "bridge")
		case "nats":
			r.nats, err = e.startNATS(ctx, r.port, r.store)
		}
		if err != nil {
			return fmt.Errorf("restart the %s: %w", what, err)
		}
		e.heal()
		back := time.Now()
		e.logf("%s back", what)
		backlog := e.acks.snapshot()
		maps.DeleteFunc(backlog, func(id string, _ ack) bool { _, ok := before[id]; return ok })
		return e.answeredAfter(ctx, backlog, what, back)
	}
}

// answeredAfter waits (up to 90 s) until every message of backlog has a
// reply on the mount, records when each first appeared there (polled
// every 50 ms), and fails the run for each answered more than backWithin
// after back.
func (e *env) answeredAfter(ctx context.Context, backlog map[string]ack, what string, back time.Time) error {
	s := newScanner(tree.Root(e.backing).Channel(chanName), chanName, agent)
	seen := make(map[string]time.Time)
	for deadline := back.Add(90 * time.Second); len(seen) < len(backlog) && time.Now().Before(deadline); {
		if err := s.scan(); err != nil {
			return err
		}
		for id := range backlog {
			if _, ok := seen[id]; !ok && len(s.replies[id]) > 0 {
				seen[id] = time.Now()
			}
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	var late []string
	var last time.Duration
	for _, id := range slices.Sorted(maps.Keys(backlog)) {
		at, ok := seen[id]
		if !ok {
			late = append(late, id+" (not within 90 s)")
			continue
		}
		took := at.Sub(back)
		last = max(last, took)
		if took > backWithin {
			late = append(late, fmt.Sprintf("%s (%v)", id, took.Round(100*time.Millisecond)))
		}
	}
	e.note("%d messages posted on the mount while the %s was down 2 s: the last answered %v after it was back (target %v)",
		len(backlog), what, last.Round(10*time.Millisecond), backWithin)
	if len(late) > 0 {
		e.problem("%d of %d messages answered more than %v after the %s came back: %s", len(late), len(backlog), backWithin, what, clip(strings.Join(late, ", "), 400))
	}
	return e.await(ctx, 30*time.Second, 3*time.Second)
}

// bridgeGone (scenario 23): two bridges side by side (the queue group
// collab-bridge); a third into a remote burst one of them is SIGKILLed
// and never comes back. The other must carry every remote send on: the
// check is remoteVerdict's, and the survivor must have posted after the
// kill.
func bridgeGone(ctx context.Context, e *env) error {
	r, err := newRemoteRun(ctx, e, 3)
	if err != nil {
		return err
	}
	defer r.close()
	for _, l := range []string{"bridge-a", "bridge-b"} {
		if err := r.startBridge(ctx, l); err != nil {
			return err
		}
	}
	d := time.Duration(e.size(12, 8)) * time.Second
	done := r.burst(ctx, "s23", d)
	if err := sleep(ctx, d/3); err != nil {
		return err
	}
	r.mu.Lock()
	survivor := r.bridges["bridge-b"]
	r.mu.Unlock()
	off := fileSize(survivor.log)
	if _, err := r.killBridge(ctx, "bridge-a", true); err != nil {
		return err
	}
	e.heal() // never heals: measured from the kill
	e.logf("bridge-a SIGKILLed for good")
	if err := <-done; err != nil {
		return err
	}
	if err := r.flush(ctx); err != nil {
		return err
	}
	after := strings.Count(readFromOff(survivor.log, off), `msg="bridge: posted"`)
	e.note("bridge-a SIGKILLed for good %v into the burst (right after it logged a post); bridge-b posted %d messages after", (d / 3).Round(time.Second), after)
	if after == 0 {
		e.problem("bridge-b posted nothing after bridge-a died: the survivor carried nothing")
	}
	var sent, queued int
	for _, s := range r.senders {
		sent += len(s.sends)
		queued += s.queued
	}
	e.note("%d remote sends, %d queued (exit 5) and flushed later", sent, queued)
	return nil
}
