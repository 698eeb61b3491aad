package service

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
)

// TraceSend starts the "collab.send" span of message m, the child of
// ctx's span (a model run's TRACEPARENT, telemetry.FromEnv, when collab
// send runs inside one), and writes its context into m's metadata
// (telemetry.Inject), before m is signed: the watcher that answers m
// continues its trace. The caller ends the span once m is posted. With
// no spans exported it costs nothing and writes nothing.
func TraceSend(ctx context.Context, m *channel.Message) trace.Span {
	tel := telemetry.Default()
	if !tel.Tracing() {
		return trace.SpanFromContext(context.Background()) // a no-op span
	}
	ctx, span := tel.Tracer().Start(ctx, "collab.send", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("collab.from", m.From), attribute.String("collab.to", m.To),
			attribute.String("collab.channel", m.SessionID), attribute.Int("collab.hops", m.Metadata.Hops)))
	telemetry.Inject(ctx, m)
	return span
}
