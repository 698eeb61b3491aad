package watcher

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/collabdev/collab/internal/agent/modelcli"
)

// errMaxTurns is wrapped by the error of a run the watcher stopped at
// Config.MaxTurns.
var errMaxTurns = errors.New("watcher: turn limit reached")

// turnLimit enforces Config.MaxTurns on one run from its events: the
// first model call is a turn, and so is each tool call after which the
// model is called again. The run is stopped when a tool call would start
// turn MaxTurns+1 (so MaxTurns 1 allows an answer but no tool call).
type turnLimit struct {
	max   int
	calls atomic.Int64
	hit   atomic.Bool
	stop  context.CancelFunc
}

// limitTurns wraps cli's OnEvent to count its turns, and returns the
// context to run it with and the limit (nil when there is none).
func (w *watcher) limitTurns(ctx context.Context, cli *modelcli.Request) (context.Context, *turnLimit) {
	if w.cfg.MaxTurns <= 0 {
		return ctx, nil
	}
	ctx, stop := context.WithCancel(ctx)
	l := &turnLimit{max: w.cfg.MaxTurns, stop: stop}
	next := cli.OnEvent
	cli.OnEvent = func(e modelcli.Event) {
		if e.Kind == modelcli.EventToolCall && l.calls.Add(1) >= int64(l.max) && !l.hit.Swap(true) {
			l.stop()
		}
		if next != nil {
			next(e)
		}
	}
	return ctx, l
}

// reached reports whether the run was stopped at the limit; it then
// replaces err with one that says so, and records that as the run's error
// event in rec's job.
func (l *turnLimit) reached(err *error, record func(modelcli.Event)) bool {
	if l == nil {
		return false
	}
	l.stop()
	if !l.hit.Load() {
		return false
	}
	*err = fmt.Errorf("%w: stopped at turn %d of at most %d", errMaxTurns, l.max+1, l.max)
	record(modelcli.Event{Kind: modelcli.EventError, Text: (*err).Error()})
	return true
}

// runLimited runs the CLI once within Config.MaxTurns.
func (w *watcher) runLimited(ctx context.Context, req *runRequest, cli modelcli.Request) (modelcli.Response, error) {
	ctx, turns := w.limitTurns(ctx, &cli)
	var resp modelcli.Response
	var err error
	if w.live(req.key) {
		// The turn's timeout stops while it waits for an answer.
		tctx, d, stop := withPausable(ctx, cli.Timeout)
		cli.Timeout, cli.Ask = 0, w.asker(d)
		resp, err = w.cfg.Live.Turn(tctx, req.key, cli)
		stop()
	} else {
		resp, err = w.cfg.Runner.Run(ctx, cli)
	}
	turns.reached(&err, req.rec.Event)
	return resp, err
}
