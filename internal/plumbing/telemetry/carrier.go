package telemetry

import (
	"context"
	"encoding/json"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/collabdev/collab/channel"
)

// The metadata extensions that carry a message's trace context: the W3C
// traceparent and tracestate headers, as JSON strings.
const (
	ExtTraceParent = "traceparent"
	ExtTraceState  = "tracestate"
)

// The environment variables that carry a trace context into a process
// (the OpenTelemetry convention): a model run's, for collab send.
const (
	EnvTraceParent = "TRACEPARENT"
	EnvTraceState  = "TRACESTATE"
)

// maxHeader bounds a traceparent or tracestate read: W3C caps tracestate
// at 32 members of 256 bytes at most; a traceparent is 55.
const maxHeader = 512

var propagator = propagation.TraceContext{}

// messageCarrier is a propagation.TextMapCarrier over a message's
// metadata extensions.
type messageCarrier struct{ m *channel.Message }

func (c messageCarrier) Get(key string) string {
	ext, ok := extFor(key)
	if !ok {
		return ""
	}
	raw, ok := c.m.Extension(ext) // a signed message's only if signed
	if !ok || len(raw) > maxHeader+2 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || len(s) > maxHeader {
		return ""
	}
	return s
}

func (c messageCarrier) Set(key, value string) {
	if ext, ok := extFor(key); ok {
		v, _ := json.Marshal(value)
		c.m.SetExtension(ext, v)
	}
}

func (c messageCarrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// extFor maps a propagator's header to its extension.
func extFor(key string) (string, bool) {
	switch strings.ToLower(key) {
	case "traceparent":
		return ExtTraceParent, true
	case "tracestate":
		return ExtTraceState, true
	}
	return "", false
}

// Inject writes the trace context of ctx's span into m's metadata, before
// m is signed; a ctx without a valid span writes nothing.
func Inject(ctx context.Context, m *channel.Message) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, messageCarrier{m})
}

// Extract returns ctx with the remote span context m carries, if it
// carries a valid one (of a signed message, under its extras signature);
// else ctx itself. A malformed value is ignored.
func Extract(ctx context.Context, m *channel.Message) context.Context {
	return propagator.Extract(ctx, messageCarrier{m})
}

// envCarrier is a carrier over TRACEPARENT and TRACESTATE.
type envCarrier map[string]string

func (c envCarrier) Get(key string) string {
	v := c[strings.ToLower(key)]
	if len(v) > maxHeader {
		return ""
	}
	return v
}
func (c envCarrier) Set(key, value string) { c[strings.ToLower(key)] = value }
func (c envCarrier) Keys() []string        { return []string{"traceparent", "tracestate"} }

// FromEnv returns ctx with the remote span context of the TRACEPARENT and
// TRACESTATE variables getenv reads, if valid; else ctx.
func FromEnv(ctx context.Context, getenv func(string) string) context.Context {
	c := envCarrier{"traceparent": getenv(EnvTraceParent), "tracestate": getenv(EnvTraceState)}
	if c["traceparent"] == "" {
		return ctx
	}
	return propagator.Extract(ctx, c)
}

// Env returns the KEY=VALUE variables that carry ctx's span context to a
// child process; none when ctx has no valid span.
func Env(ctx context.Context) []string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := envCarrier{}
	propagator.Inject(ctx, c)
	out := []string{EnvTraceParent + "=" + c["traceparent"]}
	if ts := c["tracestate"]; ts != "" {
		out = append(out, EnvTraceState+"="+ts)
	}
	return out
}
