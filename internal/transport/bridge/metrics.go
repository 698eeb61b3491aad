package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
)

// Telemetry of the bridge (package telemetry, the process's Default):
// every request refused or failed counts in collab.bridge.errors (op,
// code), every failed publish to the stream in collab.nats.errors (op
// "publish"); a relayed message gets a "collab.bridge.relay" span, the
// child of the trace context it carries (it is written unchanged); and
// with Config.Metrics the bridge serves Prometheus text at GET /metrics
// on that address (no authentication: keep it on loopback, the default
// of collab bridge --metrics, or behind what guards the host).

// MetricsPath is where the metrics listener serves.
const MetricsPath = "/metrics"

// MetricsUsage is the help of collab bridge's --metrics (Config.Metrics).
const MetricsUsage = "serve Prometheus text at http://ADDR/metrics, e.g. 127.0.0.1:9465 (no authentication: keep it on loopback); default off"

// ServeMetrics serves h at GET /metrics on ln until ctx ends.
func ServeMetrics(ctx context.Context, ln net.Listener, h http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle("GET "+MetricsPath, h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("bridge: metrics: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("bridge: metrics: %w", err)
	}
	return nil
}

// metricsPart is the metrics listener of cfg as a part of Run; nil when
// cfg.Metrics is "".
func metricsPart(cfg *Config) (func(context.Context) error, error) {
	if cfg.Metrics == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("bridge: metrics: %w", err)
	}
	h := telemetry.Default().Handler()
	return func(ctx context.Context) error { return ServeMetrics(ctx, ln, h) }, nil
}

// countRefused counts a request refused or failed.
func countRefused(op, code string) {
	if op == "" {
		op = "unknown" // the subject did not parse
	}
	telemetry.Default().BridgeError(context.Background(), op, code)
}

// traceRelay starts the span of relaying data, a message for channel ch,
// under the trace context it carries; the caller ends it.
func traceRelay(ch string, data []byte) trace.Span {
	tel := telemetry.Default()
	if !tel.Tracing() {
		return trace.SpanFromContext(context.Background())
	}
	m, err := channel.Decode(data, "", ch)
	if err != nil {
		return trace.SpanFromContext(context.Background())
	}
	_, span := tel.Tracer().Start(telemetry.Extract(context.Background(), &m), "collab.bridge.relay",
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("collab.channel", ch), attribute.String("collab.message", m.ID), attribute.String("collab.from", m.From)))
	return span
}
