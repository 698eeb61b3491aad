package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

// waitPoll is the poll of the waits measured: send --wait's and wait's
// default.
const waitPoll = delegate.DefaultPoll

// waitLayout is one way of waiting for a reply on the mount.
type waitLayout struct {
	key      string
	notify   bool // the service's wait, woken by fsnotify; else polling only
	n        int
	gap      func() time.Duration // from the wait's start to the reply's post
	p50, p99 spec
}

// waitReply measures send --wait on the mount: from the reply's file
// landing (channel.Writer.Post returning) to the wait returning it, with
// the service's wait (fsnotify) and with the same wait polling only.
func (b *bench) waitReply(ctx context.Context) []Figure {
	notify := b.waitFigures(ctx, waitLayout{key: "fsnotify", notify: true, n: b.size.waitLocal,
		gap: shortGap,
		p50: spec{name: "send --wait on the mount, fsnotify: p50", unit: "ms", max: 50,
			note: fmt.Sprintf("reply landed (Writer.Post returned) → wait returned; service.Mount ExpectReply, post, Waiter.Wait (poll 1 s); the reply posted 50–150 ms after the wait started; %d messages per run", b.size.waitLocal)},
		p99: spec{name: "send --wait on the mount, fsnotify: p99", unit: "ms", max: 50,
			note: fmt.Sprintf("nearest rank over %d messages per run", b.size.waitLocal)}})
	poll := b.waitFigures(ctx, waitLayout{key: "poll", n: b.size.waitPoll,
		gap: func() time.Duration { return 20*time.Millisecond + rand.N(waitPoll) },
		p50: spec{name: "send --wait on the mount, polling only: p50", unit: "ms",
			note: fmt.Sprintf("as above without wakes (delegate.Before and WaitWith, poll 1 s: the wait before fsnotify); the reply at a random point of the poll cycle; %d messages per run, runs side by side", b.size.waitPoll)},
		p99: spec{name: "send --wait on the mount, polling only: p99", unit: "ms",
			note: fmt.Sprintf("nearest rank over %d messages per run", b.size.waitPoll)}})
	return append(notify, poll...)
}

func (b *bench) waitFigures(ctx context.Context, l waitLayout) []Figure {
	what := "send --wait, " + l.key + " p50/p99 ms"
	measure := func(run int) ([]float64, error) {
		lat, err := b.waitRun(ctx, l, run)
		if err != nil {
			return nil, err
		}
		slices.Sort(lat)
		fmt.Fprintf(b.progress, "   send --wait, %s run %d: %d replies, min %v, max %v\n", l.key, run+1, len(lat),
			lat[0].Round(time.Microsecond), lat[len(lat)-1].Round(time.Microsecond))
		return []float64{ms(percentile(lat, 50)), ms(percentile(lat, 99))}, nil
	}
	if !l.notify { // about a second a message, mostly asleep: side by side
		results := make([]result, b.runs)
		var wg sync.WaitGroup
		for i := range b.runs {
			wg.Go(func() { results[i].vals, results[i].err = measure(i) })
		}
		wg.Wait()
		measure = func(run int) ([]float64, error) { return results[run].vals, results[run].err }
	}
	vals, err := b.repeat(ctx, what, 2, measure)
	return []Figure{l.p50.figure(vals[0], err), l.p99.figure(vals[1], err)}
}

// waitRun asks l.n questions (and a warm-up first) in a fresh tree, each
// answered by a reply posted l.gap() after the wait started, and returns
// for each the time from the reply's landing to the wait's return.
func (b *bench) waitRun(ctx context.Context, l waitLayout, run int) ([]time.Duration, error) {
	root := tree.Root(filepath.Join(b.dir, fmt.Sprintf("wait-%s-%d", l.key, run)))
	w := &channel.Writer{Root: root}
	svc := service.NewMount(service.Config{Root: root, Host: "bench"})
	opt := delegate.Options{Poll: waitPoll, Trust: signing.Any, NotFrom: senderAgent}
	var lat []time.Duration
	for i := range l.n + 1 { // 0 is the warm-up
		type returned struct {
			at  time.Time
			m   channel.Message
			err error
		}
		done := make(chan returned, 1)
		req := channel.Message{SessionID: benchChannel, From: senderAgent, To: benchAgent, Content: channel.Content{Text: fmt.Sprintf("question %d", i)}}
		wait, closeWait, err := b.expect(ctx, svc, root, l.notify)
		if err != nil {
			return nil, err
		}
		if err := w.Post(&req); err != nil {
			closeWait()
			return nil, err
		}
		go func() {
			m, err := wait(req.ID, opt)
			done <- returned{time.Now(), m, err}
		}()
		if err := sleep(ctx, l.gap()); err != nil {
			closeWait()
			return nil, err
		}
		reply := channel.Message{SessionID: benchChannel, From: benchAgent, To: senderAgent, Content: channel.Content{Text: "answer"}}
		reply.Metadata.InReplyTo = req.ID
		if err := w.Post(&reply); err != nil {
			closeWait()
			return nil, err
		}
		landed := time.Now()
		var r returned
		select {
		case r = <-done:
		case <-time.After(waitLong):
			r.err = fmt.Errorf("question %d: no reply within %v", i, waitLong)
		}
		closeWait()
		switch {
		case r.err != nil:
			return nil, r.err
		case r.m.ID != reply.ID:
			return nil, fmt.Errorf("question %d: the wait returned %s, want %s", i, r.m.ID, reply.ID)
		case i > 0:
			lat = append(lat, r.at.Sub(landed))
		}
	}
	return lat, nil
}

// expect prepares a wait for the reply to a message about to be posted:
// the service's (ExpectReply: fsnotify), or the same reader polling only.
func (b *bench) expect(ctx context.Context, svc *service.Mount, root tree.Root, notify bool) (func(id string, opt delegate.Options) (channel.Message, error), func(), error) {
	if notify {
		wt, err := svc.ExpectReply(ctx, benchChannel)
		if err != nil {
			return nil, nil, err
		}
		return func(id string, opt delegate.Options) (channel.Message, error) { return wt.Wait(ctx, id, opt) }, wt.Close, nil
	}
	r, err := delegate.Before(root, benchChannel, delegate.Options{})
	if err != nil {
		return nil, nil, err
	}
	return func(id string, opt delegate.Options) (channel.Message, error) {
		return delegate.WaitWith(ctx, r, id, opt)
	}, func() {}, nil
}
