package telemetry_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
	"github.com/collabdev/collab/internal/plumbing/telemetry/otlptest"
)

// record makes one span and one of each measurement.
func record(t *testing.T, tel *telemetry.Telemetry) {
	t.Helper()
	_, span := tel.Tracer().Start(context.Background(), "collab.test")
	span.End()
	ctx := context.Background()
	tel.Message(ctx, "bob", telemetry.StateClaimed)
	tel.Run(ctx, "bob", "completed", time.Second)
	tel.NATSError(ctx, "publish")
	tel.BridgeError(ctx, "post", "invalid")
	// Observed until the test ends: at the flush too.
	t.Cleanup(tel.Backlog("bob", func() (time.Time, bool) { return time.Now().Add(-time.Minute), true }))
}

func TestUnsetExportsNothing(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	for name, env := range map[string]map[string]string{
		"unset":    {},
		"disabled": {"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL(), "OTEL_SDK_DISABLED": "true"},
		"none": {"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL(), "OTEL_TRACES_EXPORTER": "none",
			"OTEL_METRICS_EXPORTER": "none"},
	} {
		t.Run(name, func(t *testing.T) {
			for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
				"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER"} {
				t.Setenv(k, env[k])
			}
			tel, err := telemetry.New(context.Background(), telemetry.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tel.Tracing() || tel.Metering() {
				t.Errorf("Tracing %v, Metering %v; want neither", tel.Tracing(), tel.Metering())
			}
			record(t, tel)
			if err := tel.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if s, m := rcv.Spans(), rcv.Metrics(); len(s)+len(m) > 0 {
				t.Errorf("exported %d spans, metrics %v", len(s), m)
			}
		})
	}
	// nil records nothing and does not panic.
	var none *telemetry.Telemetry
	record(t, none)
	if err := none.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestExportsWhenSet(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL())
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_SERVICE_NAME", "collab-unit")
	tel, err := telemetry.New(context.Background(), telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	record(t, tel)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 || spans[0].Name != "collab.test" || spans[0].Service != "collab-unit" {
		t.Errorf("spans %+v, want collab.test of collab-unit", spans)
	}
	got := rcv.Metrics()
	for _, m := range []string{telemetry.MetricMessages, telemetry.MetricRunDuration, telemetry.MetricNATSErrors,
		telemetry.MetricBridgeErrors, telemetry.MetricBacklogAge} {
		if !slices.Contains(got, m) {
			t.Errorf("metric %s not exported (got %v)", m, got)
		}
	}
}

func TestCarrierRoundTrip(t *testing.T) {
	tel := newTracing(t)
	ctx, span := tel.Tracer().Start(context.Background(), "send")
	defer span.End()
	var m channel.Message
	telemetry.Inject(ctx, &m)
	raw, ok := m.Metadata.Extra[telemetry.ExtTraceParent]
	if !ok {
		t.Fatalf("no traceparent in %v", m.Metadata.Extra)
	}
	var tp string
	if err := json.Unmarshal(raw, &tp); err != nil || !traceparent.MatchString(tp) {
		t.Fatalf("traceparent %s: %v", raw, err)
	}
	got := trace.SpanContextFromContext(telemetry.Extract(context.Background(), &m))
	if got.TraceID() != span.SpanContext().TraceID() || got.SpanID() != span.SpanContext().SpanID() || !got.IsRemote() {
		t.Errorf("extracted %v, want %v", got, span.SpanContext())
	}
	// Through a process's environment.
	env := telemetry.Env(ctx)
	getenv := func(k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	if got := trace.SpanContextFromContext(telemetry.FromEnv(context.Background(), getenv)); got.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("from the environment %v, want %v", got, span.SpanContext())
	}
	// No span: nothing written.
	var bare channel.Message
	telemetry.Inject(context.Background(), &bare)
	if len(bare.Metadata.Extra) != 0 || telemetry.Env(context.Background()) != nil {
		t.Errorf("a context without a span wrote %v", bare.Metadata.Extra)
	}
}

var traceparent = regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$`)

func TestCarrierIgnoresMalformed(t *testing.T) {
	for _, v := range []string{
		`"00-00000000000000000000000000000000-0000000000000000-01"`, // zero ids
		`"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7"`,    // no flags
		`"zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`,
		`"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"`, // upper case
		`42`, `{"a":1}`, `"` + string(make([]byte, 600)) + `"`, `not json`,
	} {
		m := channel.Message{}
		m.SetExtension(telemetry.ExtTraceParent, json.RawMessage(v))
		if sc := trace.SpanContextFromContext(telemetry.Extract(context.Background(), &m)); sc.IsValid() {
			t.Errorf("traceparent %.60s: extracted %v", v, sc)
		}
	}
}

func FuzzExtract(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "rojo=00f067aa0ba902b7")
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09-extra", "a=b,c=d")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, tp, ts string) {
		m := channel.Message{}
		v, _ := json.Marshal(tp)
		m.SetExtension(telemetry.ExtTraceParent, v)
		s, _ := json.Marshal(ts)
		m.SetExtension(telemetry.ExtTraceState, s)
		ctx := telemetry.Extract(context.Background(), &m)
		sc := trace.SpanContextFromContext(ctx)
		if !sc.IsValid() {
			return
		}
		// What was accepted writes back as a well-formed traceparent of
		// the same ids.
		var out channel.Message
		telemetry.Inject(ctx, &out)
		var got string
		if err := json.Unmarshal(out.Metadata.Extra[telemetry.ExtTraceParent], &got); err != nil || !traceparent.MatchString(got) {
			t.Fatalf("%q read, %q written: %v", tp, got, err)
		}
		back := trace.SpanContextFromContext(telemetry.Extract(context.Background(), &out))
		if back.TraceID() != sc.TraceID() || back.SpanID() != sc.SpanID() {
			t.Fatalf("%q: round trip %v, want %v", tp, back, sc)
		}
	})
}

// newTracing is a Telemetry that exports spans to a receiver of its own.
func newTracing(t *testing.T) *telemetry.Telemetry {
	t.Helper()
	rcv := otlptest.Start()
	t.Cleanup(rcv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL())
	t.Setenv("OTEL_SDK_DISABLED", "")
	tel, err := telemetry.New(context.Background(), telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

// A signed message's traceparent counts only under its extras signature:
// one added after the sender signed is ignored.
func TestCarrierSignedExtras(t *testing.T) {
	key, err := signing.NewKey(filepath.Join(t.TempDir(), "alice.key"), "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	tel := newTracing(t)
	ctx, span := tel.Tracer().Start(context.Background(), "send")
	defer span.End()
	m := channel.Message{ID: "msg-20260101-000000-alice-abcd", Timestamp: "2026-01-01T00:00:00Z", SessionID: "dev", From: "alice", To: "bob",
		Type: "chat", Content: channel.Content{Text: "hi"}}
	m.Signature = key.Sign(m.Payload())
	telemetry.Inject(ctx, &m) // added after the signature, not covered
	if sc := trace.SpanContextFromContext(telemetry.Extract(context.Background(), &m)); sc.IsValid() {
		t.Errorf("an unsigned traceparent of a signed message was read: %v", sc)
	}
	m.ExtrasSignature = key.Sign(m.ExtrasPayload())
	if sc := trace.SpanContextFromContext(telemetry.Extract(context.Background(), &m)); sc.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("the signed traceparent was not read: %v", sc)
	}
}
