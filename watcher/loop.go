package watcher

// The loop: one goroutine owns the watcher's state; wake-ups, the job's
// end and the stop come to it.

import (
	"context"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/proc"
	"github.com/collabdev/collab/presence"
)

// stopping is the loop's way to its end.
type stopping struct {
	done  <-chan struct{}  // ctx.Done() until seen, then nil
	now   bool             // take nothing new
	grace <-chan time.Time // the running CLI's grace is over
	hurry <-chan struct{}  // Config.Hurry once stopping
}

// loop is the one goroutine that owns the watcher's state: it polls, runs
// one job at a time, beats and, once ctx is done, lets the running job
// end within the grace.
func (w *watcher) loop(ctx context.Context) error {
	defer w.startHopEnder()() // last: every hop's span is ended when loop returns
	wctx, stopWakers := context.WithCancel(ctx)
	defer stopWakers()
	wake := w.startWakers(wctx)
	janitorDone := make(chan struct{})
	go func() { // orphans (OrphanAge > 0) and delivery reports
		defer close(janitorDone)
		w.janitor(wctx)
	}()
	defer func() { // Run returns with no write of the janitor's in flight
		stopWakers()
		<-janitorDone
	}()
	jobCtx, killJob := context.WithCancelCause(context.Background())
	defer killJob(nil)
	poll := time.NewTicker(w.cfg.Poll)
	defer poll.Stop()
	beat := time.NewTicker(w.cfg.Heartbeat)
	defer beat.Stop()

	w.list = true
	w.poll()
	w.dispatch(jobCtx)
	// done is nil for a context that is never done (context.Background):
	// stop.now, not done, says whether to keep going.
	stop := stopping{done: ctx.Done()}
	for !stop.now || w.busy != nil {
		select {
		case <-stop.done:
			w.beginStop(&stop)
		case <-stop.grace:
			w.log.Warn("grace period over; stopping the CLI", keyMsg, w.busy.it.msg.ID)
			killJob(context.Canceled)
		case <-stop.hurry:
			stop.hurry, stop.grace = nil, nil
			if w.busy != nil {
				w.log.Warn("told to hurry; killing the CLI", keyMsg, w.busy.it.msg.ID)
				killJob(proc.ErrKill)
			}
		case <-poll.C:
			w.list = true
		case m := <-w.cfg.Announce:
			if r := w.readers[m.SessionID]; r != nil {
				r.Hint(m.File)
				w.woken.named(m.SessionID, m.File, delivery.ViaNATS)
			}
		case <-wake:
			w.takeWakes()
		case <-beat.C:
			w.heartbeat()
		case <-w.launching():
			w.launched()
		case <-w.cfg.Kills:
			// checkKill, below, looks at the kill file now.
		case a := <-w.asks:
			w.asked(a)
		case <-w.askExpiry():
			w.askExpired()
		case r := <-w.done:
			w.finish(r)
		}
		if ctx.Err() != nil {
			stop.now = true // take nothing new, even if done was not picked yet
		}
		w.step(jobCtx, stop.now)
	}
	w.stopped()
	return nil
}

// wakes collects the Wakers' wake-ups between two turns of the loop, and
// (for the loop only) what named each file until a scan reads it: the
// seen file's via (package delivery).
type wakes struct {
	mu    sync.Mutex
	files map[string][]hint // by channel
	list  bool              // a listing of every channel was asked for

	// Owned by the loop's goroutine: what named each file hinted (by
	// channel and file name) until a scan reads it, and the wake-up of
	// the message the scan hands to consider.
	via   map[string]string
	sight delivery.Woken
}

// hint is a file a wake source named, and which source (a delivery.Via*).
type hint struct{ file, via string }

func (k *wakes) add(ch, file, via string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ch == "" || file == "" || len(k.files[ch]) >= maxPendingWakes {
		k.list = true
		return
	}
	if k.files == nil {
		k.files = make(map[string][]hint)
	}
	k.files[ch] = append(k.files[ch], hint{file, via})
}

// named records that via named file of channel ch, unless another source
// did first. Names no scan reads (a file that never comes, or one read
// already) are dropped beyond maxPendingWakes.
func (k *wakes) named(ch, file, via string) {
	if via == "" {
		return
	}
	if k.via == nil || len(k.via) >= maxPendingWakes {
		k.via = make(map[string]string)
	}
	key := ch + "/" + file
	if _, ok := k.via[key]; !ok {
		k.via[key] = via
	}
}

// viaOf returns (and forgets) what named file of channel ch; "" when
// nothing did.
func (k *wakes) viaOf(ch, file string) string {
	key := ch + "/" + file
	v := k.via[key]
	delete(k.via, key)
	return v
}

// maxPendingWakes bounds the names kept between two turns of the loop;
// beyond it a listing is asked for instead.
const maxPendingWakes = 1024

func (k *wakes) take() (map[string][]hint, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	files, list := k.files, k.list
	k.files, k.list = nil, false
	return files, list
}

// startWakers runs the Wakers until ctx is done; the channel returned
// receives their wake-ups (at most one waits), whose names are in w.woken.
func (w *watcher) startWakers(ctx context.Context) <-chan struct{} {
	wake := make(chan struct{}, 1)
	for _, wk := range w.cfg.Wakers {
		via := wakerVia(wk)
		go func() {
			err := wk.Watch(ctx, w.cfg.Channels, func(ch, file string) {
				w.woken.add(ch, file, via)
				select {
				case wake <- struct{}{}:
				default:
				}
			})
			if err != nil && ctx.Err() == nil {
				w.log.Warn("wake source stopped; polling only", keyErr, err)
			}
		}()
	}
	return wake
}

// wakerVia names what wk's wake-ups are (a delivery.Via*): its Via
// method's word, "" for a Waker without one.
func wakerVia(wk Waker) string {
	if n, ok := wk.(interface{ Via() string }); ok {
		return n.Via()
	}
	return ""
}

// beginStop takes nothing new from now on and gives a running CLI the
// grace to finish.
func (w *watcher) beginStop(s *stopping) {
	s.done, s.now = nil, true
	s.hurry = w.cfg.Hurry
	if w.busy != nil {
		w.log.Info("stopping; waiting for the running CLI", keyMsg, w.busy.it.msg.ID, keyGrace, w.cfg.Grace)
		s.grace = time.After(w.cfg.Grace)
	}
}

// step is what the loop does after each event: look for a kill request,
// poll and start the next job unless stopping, save the state if it
// changed (once the running job is recorded as launched).
func (w *watcher) step(jobCtx context.Context, stopping bool) {
	w.checkKill()
	if !stopping {
		w.poll()
		w.takeAnswers(w.now())
		w.dispatch(jobCtx)
	}
	if w.dirty && (w.busy == nil || w.busy.launched) {
		w.save()
	}
}

// stopped is the loop's end: a last try at the outbox, OFFLINE presence
// and the state saved.
func (w *watcher) stopped() {
	w.closeOutbox()
	if w.presenceMine() && (w.other == 0 || !proc.PIDAlive(w.other)) {
		w.setPresence(presence.StateOffline, "")
	} else {
		w.log.Warn("another watcher of this agent runs on this host; not writing OFFLINE", keyPID, w.other)
	}
	w.save()
	w.log.Info("stopped", keyHandled, w.handled, keyFailed, w.failed)
}

// takeWakes hands the files the Wakers named to the readers; a wake-up
// with no name makes the next poll list every channel, even those whose
// folders look unchanged.
func (w *watcher) takeWakes() {
	files, list := w.woken.take()
	for ch, names := range files {
		if r := w.readers[ch]; r != nil {
			for _, h := range names {
				r.Hint(h.file)
				w.woken.named(ch, h.file, h.via)
			}
		}
	}
	if list {
		for _, r := range w.readers {
			r.Invalidate()
		}
		w.list = true
	}
}
