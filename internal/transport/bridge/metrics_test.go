package bridge

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
	"github.com/collabdev/collab/internal/plumbing/telemetry/otlptest"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// downStream is a stream that refuses every publish.
type downStream struct{}

func (downStream) PublishMessage(context.Context, *channel.Message) error {
	return errors.New("nats: no responders")
}
func (downStream) JetStream() bool { return true }

// GET /metrics on the bridge's listener is Prometheus text with the
// bridge's and the stream's errors, by op and code.
func TestMetricsEndpoint(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		t.Setenv(k, "")
	}
	tel, err := telemetry.New(context.Background(), telemetry.Options{Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	defer telemetry.SetDefault(telemetry.SetDefault(tel))

	root := tree.Root(t.TempDir())
	s := New(Config{Root: root, Host: "h1", Logger: slog.New(slog.DiscardHandler)})
	s.Handle(SubjectPrefix+".nosuchop.bob", nil) // refused: invalid
	s.Handle(SubjectPrefix+".nosuchop.bob", nil)
	p := &Publisher{Root: root, Stream: downStream{}, Logger: slog.New(slog.DiscardHandler)}
	p.defaults()
	p.pending = map[string][]channel.Message{"dev": {{ID: "msg-20260101-000000-bob-abcd"}}}
	if p.flush(context.Background(), "dev") {
		t.Fatal("flush reported success on a stream that refuses")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeMetrics(ctx, ln, tel.Handler()) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeMetrics: %v", err)
		}
	}()
	fams := scrape(t, "http://"+ln.Addr().String()+MetricsPath)
	be := fams["collab_bridge_errors_total"]
	if be == nil || be.GetType() != dto.MetricType_COUNTER {
		t.Fatalf("no counter collab_bridge_errors_total in %v", names(fams))
	}
	var got float64
	for _, m := range be.Metric {
		if label(m, "op") != "unknown" || label(m, "code") != CodeInvalid {
			continue
		}
		got += m.GetCounter().GetValue()
	}
	if got != 2 {
		t.Errorf("collab_bridge_errors_total{code=invalid} = %v, want 2: %v", got, be)
	}
	ne := fams["collab_nats_errors_total"]
	if ne == nil || len(ne.Metric) != 1 || label(ne.Metric[0], "op") != "publish" || ne.Metric[0].GetCounter().GetValue() != 1 {
		t.Errorf("collab_nats_errors_total = %v, want 1 with op=publish", ne)
	}
}

// scrape GETs url and parses its Prometheus text.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse %s: %v\n%s", url, err, body)
	}
	return fams
}

func names(f map[string]*dto.MetricFamily) []string {
	var out []string
	for k := range f {
		out = append(out, k)
	}
	return out
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// A relayed message keeps its traceparent, and the relay is a span, the
// child of the one the message carries.
func TestRelaySpan(t *testing.T) {
	rcv, tel := otlptest.Exporting(t, "")
	defer telemetry.SetDefault(telemetry.SetDefault(tel))
	e := newEnv(t)
	s := e.server(Config{})
	ctx, send := tel.Tracer().Start(context.Background(), "collab.send")
	m := msg("alice", "dev", "traced", nil)
	telemetry.Inject(ctx, &m)
	send.End()
	key := e.keys["alice"]
	m.Signature = key.Sign(m.Payload())
	m.ExtrasSignature = key.Sign(m.ExtrasPayload())
	if r := handle(t, s, OpPost, "alice", postBody(t, m), nil); !r.OK {
		t.Fatalf("post: %+v", r)
	}
	got, err := channel.Lookup(e.root, "dev", m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Metadata.Extra[telemetry.ExtTraceParent]) != string(m.Metadata.Extra[telemetry.ExtTraceParent]) {
		t.Errorf("traceparent %s relayed as %s", m.Metadata.Extra[telemetry.ExtTraceParent], got.Metadata.Extra[telemetry.ExtTraceParent])
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	var relay []otlptest.Span
	for _, sp := range rcv.Spans() {
		if sp.Name == "collab.bridge.relay" {
			relay = append(relay, sp)
		}
	}
	if len(relay) != 1 || relay[0].Parent != send.SpanContext().SpanID().String() || relay[0].TraceID != send.SpanContext().TraceID().String() {
		t.Errorf("relay spans %+v, want one, child of %s", relay, send.SpanContext().SpanID())
	}
}
