package telemetry

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The instruments, by their OpenTelemetry names; the Prometheus names
// (the same through collab serve's tree collector) follow in comments.
const (
	// MetricMessages counts messages per agent and state: seen, claimed,
	// answered, failed, skipped (collab_messages_total{agent,state}).
	MetricMessages = "collab.messages"
	// MetricRunDuration is the duration of model runs per agent and
	// outcome (collab_run_duration_seconds{agent,outcome}).
	MetricRunDuration = "collab.run.duration"
	// MetricBacklogAge is the age of the oldest message an agent's
	// watcher has seen and not yet claimed, 0 when none
	// (collab_backlog_age_seconds{agent}).
	MetricBacklogAge = "collab.backlog.age"
	// MetricNATSErrors counts failed NATS publishes and requests
	// (collab_nats_errors_total{op}).
	MetricNATSErrors = "collab.nats.errors"
	// MetricBridgeErrors counts requests a bridge failed or refused
	// (collab_bridge_errors_total{op,code}).
	MetricBridgeErrors = "collab.bridge.errors"
)

// States of MetricMessages.
const (
	StateSeen     = "seen"
	StateClaimed  = "claimed"
	StateAnswered = "answered"
	StateFailed   = "failed"
	StateSkipped  = "skipped"
	// StateReported: a delivery report went to the sender (collab
	// serve's tree figures only: the report mark).
	StateReported = "reported"
)

// Attribute keys of spans and metrics.
const (
	KeyAgent   = "agent"
	KeyState   = "state"
	KeyOutcome = "outcome"
	KeyOp      = "op"
	KeyCode    = "code"
)

type instruments struct {
	messages     metric.Int64Counter
	runs         metric.Float64Histogram
	natsErrors   metric.Int64Counter
	bridgeErrors metric.Int64Counter

	mu      sync.Mutex
	backlog map[string]func() (time.Time, bool)
	now     func() time.Time
}

func (in *instruments) init(m metric.Meter) error {
	var err error
	if in.messages, err = m.Int64Counter(MetricMessages, metric.WithUnit("{message}"),
		metric.WithDescription("Messages per agent and state (seen, claimed, answered, failed, skipped).")); err != nil {
		return err
	}
	if in.runs, err = m.Float64Histogram(MetricRunDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of model runs per agent and outcome."),
		metric.WithExplicitBucketBoundaries(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)); err != nil {
		return err
	}
	if in.natsErrors, err = m.Int64Counter(MetricNATSErrors, metric.WithUnit("{error}"),
		metric.WithDescription("Failed NATS publishes and requests.")); err != nil {
		return err
	}
	if in.bridgeErrors, err = m.Int64Counter(MetricBridgeErrors, metric.WithUnit("{error}"),
		metric.WithDescription("Requests a bridge failed or refused.")); err != nil {
		return err
	}
	in.backlog = map[string]func() (time.Time, bool){}
	in.now = time.Now
	_, err = m.Float64ObservableGauge(MetricBacklogAge, metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest message an agent's watcher has seen and not claimed."),
		metric.WithFloat64Callback(in.observeBacklog))
	return err
}

func (in *instruments) observeBacklog(_ context.Context, o metric.Float64Observer) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	now := in.now()
	for agent, oldest := range in.backlog {
		age := 0.0
		if t, ok := oldest(); ok {
			age = max(now.Sub(t).Seconds(), 0)
		}
		o.Observe(age, metric.WithAttributes(attribute.String(KeyAgent, agent)))
	}
	return nil
}

// Message counts one message of agent reaching state.
func (t *Telemetry) Message(ctx context.Context, agent, state string) {
	if t == nil || t.inst.messages == nil {
		return
	}
	t.inst.messages.Add(ctx, 1, metric.WithAttributes(attribute.String(KeyAgent, agent), attribute.String(KeyState, state)))
}

// Run records a model run of agent that took d and ended with outcome
// (a job status: completed, failed, killed, …).
func (t *Telemetry) Run(ctx context.Context, agent, outcome string, d time.Duration) {
	if t == nil || t.inst.runs == nil {
		return
	}
	t.inst.runs.Record(ctx, d.Seconds(), metric.WithAttributes(attribute.String(KeyAgent, agent), attribute.String(KeyOutcome, outcome)))
}

// NATSError counts a failed NATS operation op (publish, request, …).
func (t *Telemetry) NATSError(ctx context.Context, op string) {
	if t == nil || t.inst.natsErrors == nil {
		return
	}
	t.inst.natsErrors.Add(ctx, 1, metric.WithAttributes(attribute.String(KeyOp, op)))
}

// BridgeError counts a bridge request op that failed or was refused
// with code (the wire's: invalid, forbidden, internal, …).
func (t *Telemetry) BridgeError(ctx context.Context, op, code string) {
	if t == nil || t.inst.bridgeErrors == nil {
		return
	}
	t.inst.bridgeErrors.Add(ctx, 1, metric.WithAttributes(attribute.String(KeyOp, op), attribute.String(KeyCode, code)))
}

// Backlog makes agent's backlog age observed through oldest (the time of
// the oldest message seen and not claimed; false: none), called at each
// collection from the exporter's goroutine: it must be safe for that.
// The returned func stops it.
func (t *Telemetry) Backlog(agent string, oldest func() (time.Time, bool)) (stop func()) {
	if t == nil || t.inst.backlog == nil {
		return func() {}
	}
	in := &t.inst
	in.mu.Lock()
	in.backlog[agent] = oldest
	in.mu.Unlock()
	return func() {
		in.mu.Lock()
		delete(in.backlog, agent)
		in.mu.Unlock()
	}
}
