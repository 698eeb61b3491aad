package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync/atomic"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Scenario 9: clock skew and a clock jumping back.

// clockSkew (scenario 9): a sender whose clock is 5 min behind and one
// whose clock is 5 min ahead (their message names and timestamps are),
// interleaved with an on-time `collab send`, and the watcher restarted in
// the middle (its saved cursor, pushed 5 min ahead by the early names, must
// keep the on-time and late ones). Meanwhile jumper, one agent posting
// about 8 messages a second, has its clock jump back 2 s halfway: for 2 s
// its names reuse seconds it has already written (jumpingWriter).
func clockSkew(ctx context.Context, e *env) error {
	n := e.size(40, 15)
	o := watchOpts{root: e.backing}
	w, err := e.startWatcher(ctx, o, true)
	if err != nil {
		return err
	}
	late := &channel.Writer{Root: tree.Root(e.backing), Now: func() time.Time { return time.Now().Add(-5 * time.Minute) }}
	early := &channel.Writer{Root: tree.Root(e.backing), Now: func() time.Time { return time.Now().Add(5 * time.Minute) }}
	jctx, stopJumper := context.WithCancel(ctx)
	defer stopJumper()
	jumped := make(chan error, 1)
	go func() { jumped <- jumpingWriter(jctx, e, time.Duration(e.size(8, 5))*time.Second) }()
	for i := range n {
		if i == n/2 {
			if !w.terminate(10*time.Second) || w.err != nil {
				e.problem("watcher did not stop cleanly on SIGTERM: %v", w.err)
			}
			if w, err = e.startWatcher(ctx, o, true); err != nil {
				return err
			}
			e.heal()
		}
		if _, err := e.send(ctx, e.backing, sender, fmt.Sprintf("s9 on time %d of %d", i+1, n)); err != nil {
			return err
		}
		m := &channel.Message{From: "laggard", Content: channel.Content{Text: fmt.Sprintf("s9 5 min late %d of %d", i+1, n)}}
		if _, err := e.post(late, m); err != nil {
			return err
		}
		m = &channel.Message{From: "hasty", Content: channel.Content{Text: fmt.Sprintf("s9 5 min early %d of %d", i+1, n)}}
		if _, err := e.post(early, m); err != nil {
			return err
		}
		if err := sleep(ctx, between(e.rng, 0, 300*time.Millisecond)); err != nil {
			return err
		}
	}
	if err := <-jumped; err != nil {
		return err
	}
	return e.await(ctx, 60*time.Second, 2*time.Second)
}

// jumpingWriter posts as "jumper" for about d, a message every 80 to 170
// ms, its clock jumping back 2 s halfway. After the jump, every message
// in a second the writer used before the jump first meets a name clash: it is
// posted under the name of that earlier message (as if the random hex4
// had come up again), which must fail with fs.ErrExist and leave the
// earlier message as it was; the writer then posts it again with a new
// hex4 in the same second. Every message must be answered once (the
// checker), and each clash resolved.
func jumpingWriter(ctx context.Context, e *env, d time.Duration) error {
	const from = "jumper"
	var offset atomic.Int64 // nanoseconds added to the real clock
	wr := &channel.Writer{Root: tree.Root(e.backing), Now: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }}
	rng := newRng(e)
	bySecond := make(map[int64][]ack) // the names of each second before the jump
	start := time.Now()
	posted, reused, clashes := 0, 0, 0
	for i := 0; time.Since(start) < d; i++ {
		if offset.Load() == 0 && time.Since(start) >= d/2 {
			offset.Store(int64(-2 * time.Second))
			e.logf("jumper's clock jumps back 2 s after %d messages", posted)
		}
		text := fmt.Sprintf("s9 jumper %d", i+1)
		sec := wr.Now().Unix()
		clashed := false
		if prev := bySecond[sec]; offset.Load() != 0 && len(prev) > 0 {
			reused++
			clashed = true
			// The clash: the name of an earlier message of this second.
			old := prev[rng.IntN(len(prev))]
			m := &channel.Message{ID: old.ID, From: from, SessionID: chanName, To: agent, Content: channel.Content{Text: text}}
			err := wr.Post(m)
			if !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("jumper: posting under the existing name %s gave %v, want an error wrapping fs.ErrExist", old.ID, err)
			}
			if got, err := channel.Lookup(tree.Root(e.backing), chanName, old.ID); err != nil || got.Content.Text != old.Text {
				e.problem("jumper: the clash on %s changed the earlier message: %v %q", old.ID, err, got.Content.Text)
			}
		}
		m := &channel.Message{From: from, Content: channel.Content{Text: text}}
		a, err := e.post(wr, m)
		if err != nil {
			return fmt.Errorf("jumper: %w", err)
		}
		posted++
		if n, err := channel.ParseID(a.ID); err == nil {
			if clashed && n.Time.Unix() == sec {
				clashes++ // resolved: a new name in the same second
			}
			if offset.Load() == 0 {
				bySecond[n.Time.Unix()] = append(bySecond[n.Time.Unix()], a)
			}
		}
		if err := sleep(ctx, between(rng, 80*time.Millisecond, 170*time.Millisecond)); err != nil {
			return err
		}
	}
	e.note("jumper: %d messages, clock back 2 s halfway; %d posted in a second it had used before the jump, each after a name clash; %d clashes resolved with a new hex4 in the same second (the others crossed into the next second)", posted, reused, clashes)
	if reused == 0 || clashes == 0 {
		e.problem("the clock jump never made jumper reuse a second: nothing was tested")
	}
	return nil
}
