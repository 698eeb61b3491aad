package watcher

// Telemetry: the span of each message the watcher answers (its hop), the
// trace context its reply and its model run carry on, and the watcher's
// metrics (package telemetry).
//
// A hop's span, "collab.hop agent=NAME", is the child of the span the
// message carries (its traceparent: the sender's collab.send, or the hop
// that posted it as a reply). It starts at the message's time and is
// begun when the run starts (or the reply is posted), so that the reply
// and the model run's TRACEPARENT carry its context; it ends when the
// claim is finished, with one child span per gap between two stages of
// the message's timeline (delivery.TimelineFor), each from the earlier
// stage to the later, named after the later ("collab.stage claimed").

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
)

// Span names and attribute keys of the watcher's spans.
const (
	spanHop   = "collab.hop agent="
	spanStage = "collab.stage "

	attrAgent   = "collab.agent"
	attrChannel = "collab.channel"
	attrMessage = "collab.message"
	attrFrom    = "collab.from"
	attrHops    = "collab.hops"
	attrStatus  = "collab.status"
	attrReply   = "collab.reply"
	attrVia     = "collab.via"
	attrHost    = "collab.host"
	attrNote    = "collab.note"
	attrFromSt  = "collab.stage.from"
)

// hopTrace is the watcher's telemetry state, owned by the loop but for
// oldest, which the exporter reads; the hops sent on ends are the hop
// ender's.
type hopTrace struct {
	open   map[ref]*hop
	ends   chan hopEnd  // to the hop ender (startHopEnder); nil: none
	oldest atomic.Int64 // unix nanoseconds of the oldest queued message; 0: none
}

// hop is the span of a message being answered.
type hop struct {
	ctx  context.Context
	span trace.Span
	msg  channel.Message
}

// tel is the watcher's Telemetry.
func (w *watcher) tel() *telemetry.Telemetry {
	if w.cfg.Telemetry != nil {
		return w.cfg.Telemetry
	}
	return telemetry.Default()
}

// startTelemetry has the watcher's backlog age observed until the
// returned func is called (at Run's end).
func (w *watcher) startTelemetry() (stop func()) {
	return w.tel().Backlog(w.cfg.Agent, func() (time.Time, bool) {
		n := w.trace.oldest.Load()
		return time.Unix(0, n), n != 0
	})
}

// noteBacklog records the time of the oldest message in the queue, for
// the backlog age.
func (w *watcher) noteBacklog() {
	if !w.tel().Metering() {
		return
	}
	var oldest time.Time
	for _, it := range w.queue {
		if t := it.msg.Time(); !t.IsZero() && (oldest.IsZero() || t.Before(oldest)) {
			oldest = t
		}
	}
	n := int64(0)
	if !oldest.IsZero() {
		n = oldest.UnixNano()
	}
	w.trace.oldest.Store(n)
}

// seenQueued counts a message queued (and marked seen).
func (w *watcher) seenQueued() { w.count(telemetry.StateSeen) }

// count counts one of the agent's messages reaching state.
func (w *watcher) count(state string) {
	w.tel().Message(context.Background(), w.cfg.Agent, state)
}

// beginHop returns the span of the item's hop, begun now if need be; nil
// when spans are not exported.
func (w *watcher) beginHop(it *item) *hop {
	t := w.tel()
	if !t.Tracing() {
		return nil
	}
	if h := w.trace.open[it.ref()]; h != nil {
		return h
	}
	m := &it.msg
	start := m.Time()
	if start.IsZero() {
		start = w.now()
	}
	ctx, span := t.Tracer().Start(telemetry.Extract(context.Background(), m), spanHop+w.cfg.Agent,
		trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String(attrAgent, w.cfg.Agent), attribute.String(attrChannel, m.SessionID),
			attribute.String(attrMessage, m.ID), attribute.String(attrFrom, m.From), attribute.Int(attrHops, m.Metadata.Hops)))
	h := &hop{ctx: ctx, span: span, msg: *m}
	if w.trace.open == nil {
		w.trace.open = map[ref]*hop{}
	}
	w.trace.open[it.ref()] = h
	return h
}

// hopEnv is what a model run's environment gets of the item's hop:
// TRACEPARENT (telemetry.Env), so that what the run sends is of the trace.
func (w *watcher) hopEnv(it *item) []string {
	if h := w.beginHop(it); h != nil {
		return telemetry.Env(h.ctx)
	}
	return nil
}

// traceReply writes the context of the item's hop into its reply.
func (w *watcher) traceReply(it *item, reply *channel.Message) {
	if h := w.beginHop(it); h != nil {
		telemetry.Inject(h.ctx, reply)
	}
}

// endHop counts the item's end with the claim status, and ends its hop's
// span with the stages of its timeline. An item rebuilt from an outbox
// entry of an earlier run (no time) gets no span of its own.
func (w *watcher) endHop(it *item, status, reply, note string) {
	switch status {
	case claim.Replied:
		w.count(telemetry.StateAnswered)
	case claim.Failed:
		w.count(telemetry.StateFailed)
	case claim.Skipped:
		w.count(telemetry.StateSkipped)
	}
	h := w.trace.open[it.ref()]
	if h == nil {
		if it.msg.Timestamp == "" {
			return
		}
		if h = w.beginHop(it); h == nil {
			return
		}
	}
	delete(w.trace.open, it.ref())
	e := hopEnd{h: h, status: status, reply: reply, note: note, end: w.now()}
	select {
	case w.trace.ends <- e: // off the loop: the next message is not kept waiting
	default: // no ender (not started, or busy): here
		w.finishHop(e)
	}
}

// hopEnd is a hop's span to end, with how its message ended.
type hopEnd struct {
	h                   *hop
	status, reply, note string
	end                 time.Time
}

// startHopEnder starts, when spans are exported, the goroutine that ends
// the hops' spans: reading a message's timeline takes a few file reads,
// which the loop does not wait for. stop closes its queue and waits
// until it has ended every span given.
func (w *watcher) startHopEnder() (stop func()) {
	if !w.tel().Tracing() {
		return func() {}
	}
	ends, done := make(chan hopEnd, 64), make(chan struct{})
	w.trace.ends = ends
	go func() {
		defer close(done)
		for e := range ends {
			w.finishHop(e)
		}
	}()
	return func() {
		w.trace.ends = nil
		close(ends)
		<-done
	}
}

// finishHop ends e's span with the stages of its message's timeline. It
// reads only the files and the watcher's settings: the hop ender's
// goroutine calls it.
func (w *watcher) finishHop(e hopEnd) {
	h := e.h
	tl := delivery.TimelineFor(w.cfg.Root, h.msg.SessionID, &h.msg, w.cfg.Agent, delivery.Options{Now: w.cfg.Now, Host: w.cfg.Host})
	stageSpans(h.ctx, w.tel().Tracer(), tl.Stages, h.msg.Time(), e.end)
	h.span.SetAttributes(attribute.String(attrStatus, e.status))
	if e.reply != "" {
		h.span.SetAttributes(attribute.String(attrReply, e.reply))
	}
	if e.status == claim.Failed {
		h.span.SetStatus(codes.Error, e.note)
	}
	h.span.End(trace.WithTimestamp(e.end))
}

// stageSpans makes, under ctx's span, one span per gap between two
// stages, clamped to [start, end].
func stageSpans(ctx context.Context, tr trace.Tracer, stages []delivery.Stage, start, end time.Time) {
	clamp := func(t time.Time) time.Time {
		if t.Before(start) {
			return start
		}
		if t.After(end) {
			return end
		}
		return t
	}
	for i := 1; i < len(stages); i++ {
		prev, s := stages[i-1], stages[i]
		from := clamp(prev.Time)
		to := clamp(s.Time)
		if to.Before(from) {
			to = from
		}
		attrs := []attribute.KeyValue{attribute.String(attrFromSt, prev.Name)}
		for _, kv := range [][2]string{{attrVia, s.Via}, {attrHost, s.Host}, {attrNote, s.Note}} {
			if kv[1] != "" {
				attrs = append(attrs, attribute.String(kv[0], kv[1]))
			}
		}
		_, span := tr.Start(ctx, spanStage+s.Name, trace.WithTimestamp(from), trace.WithAttributes(attrs...))
		span.End(trace.WithTimestamp(to))
	}
}

// traceRun records the duration of the job's run by its outcome.
func (w *watcher) traceRun(j *job, r *jobResult, now time.Time) {
	outcome := "completed"
	switch {
	case j.killed:
		outcome = "killed"
	case r.err != nil:
		outcome = "failed"
	}
	w.tel().Run(context.Background(), w.cfg.Agent, outcome, now.Sub(j.started))
}
