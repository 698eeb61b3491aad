package service_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/collabdev/collab/internal/plumbing/telemetry"
	"github.com/collabdev/collab/internal/plumbing/telemetry/otlptest"
	"github.com/collabdev/collab/internal/service"
)

// A post inside a model run (TRACEPARENT set) makes a collab.send span,
// the child of the run's, and the message carries that span's context.
func TestPostCarriesTraceContext(t *testing.T) {
	rcv, tel := otlptest.Exporting(t, "")
	defer telemetry.SetDefault(telemetry.SetDefault(tel))

	const run = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := telemetry.FromEnv(context.Background(), func(k string) string {
		if k == telemetry.EnvTraceParent {
			return run
		}
		return ""
	})
	svc, _ := newMount(t, nil)
	got, err := svc.Post(ctx, service.Actor{Name: "bob", Hops: 0}, service.PostRequest{Channel: "dev", To: "carol", Text: "please"})
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.SpanContextFromContext(telemetry.Extract(context.Background(), &got.Message))
	if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("message carries %v, want the run's trace", sc)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 || spans[0].Name != "collab.send" || spans[0].Parent != "00f067aa0ba902b7" || spans[0].SpanID != sc.SpanID().String() {
		t.Errorf("spans %+v, want one collab.send, child of the run's, whose context the message carries", spans)
	}
}
