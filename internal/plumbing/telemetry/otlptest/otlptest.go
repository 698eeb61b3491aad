// Package otlptest is an in-process OTLP/HTTP receiver for tests and the
// bench: it keeps the spans and the names of the metrics the exporters
// send it (protobuf, as collab's exporters send them, optionally gzip).
package otlptest

import (
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/telemetry"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// Span is a span the receiver got.
type Span struct {
	TraceID, SpanID, Parent string // hex; Parent "" for a root
	Name                    string
	Start, End              uint64 // unix nanoseconds
	Attrs                   map[string]string
	Service                 string // its resource's service.name
}

// Receiver is an OTLP/HTTP receiver on 127.0.0.1.
type Receiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	spans   []Span
	metrics []string
	changed chan struct{}
}

// Start starts a receiver; Close stops it.
func Start() *Receiver {
	r := &Receiver{changed: make(chan struct{})}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic("otlptest: " + err.Error())
	}
	r.srv.Listener = ln
	r.srv.Start()
	return r
}

// URL is the base URL, for OTEL_EXPORTER_OTLP_ENDPOINT.
func (r *Receiver) URL() string { return r.srv.URL }

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Metrics returns the names of the metrics received so far.
func (r *Receiver) Metrics() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.metrics)
}

// Changed is closed at the next export received.
func (r *Receiver) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var resp []byte
	switch req.URL.Path {
	case "/v1/traces":
		er := ptraceotlp.NewExportRequest()
		if err = er.UnmarshalProto(data); err == nil {
			r.addSpans(er)
			resp, err = ptraceotlp.NewExportResponse().MarshalProto()
		}
	case "/v1/metrics":
		er := pmetricotlp.NewExportRequest()
		if err = er.UnmarshalProto(data); err == nil {
			r.addMetrics(er)
			resp, err = pmetricotlp.NewExportResponse().MarshalProto()
		}
	default:
		http.NotFound(w, req)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

func (r *Receiver) addSpans(er ptraceotlp.ExportRequest) {
	var got []Span
	rss := er.Traces().ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		svc := ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			svc = v.AsString()
		}
		for j := range rs.ScopeSpans().Len() {
			ss := rs.ScopeSpans().At(j).Spans()
			for k := range ss.Len() {
				s := ss.At(k)
				sp := Span{TraceID: s.TraceID().String(), SpanID: s.SpanID().String(), Name: s.Name(),
					Start: uint64(s.StartTimestamp()), End: uint64(s.EndTimestamp()), Attrs: map[string]string{}, Service: svc}
				if !s.ParentSpanID().IsEmpty() {
					sp.Parent = s.ParentSpanID().String()
				}
				for k, v := range s.Attributes().All() {
					sp.Attrs[k] = v.AsString()
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.notify()
	r.mu.Unlock()
}

func (r *Receiver) addMetrics(er pmetricotlp.ExportRequest) {
	var got []string
	rms := er.Metrics().ResourceMetrics()
	for i := range rms.Len() {
		sms := rms.At(i).ScopeMetrics()
		for j := range sms.Len() {
			ms := sms.At(j).Metrics()
			for k := range ms.Len() {
				got = append(got, ms.At(k).Name())
			}
		}
	}
	r.mu.Lock()
	r.metrics = append(r.metrics, got...)
	r.notify()
	r.mu.Unlock()
}

// notify closes changed; r.mu is held.
func (r *Receiver) notify() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Exporting starts a receiver for test t, points the OTLP variables at it
// (t.Setenv) and returns it with telemetry made from them, as service
// ("" for the SDK's default); both are closed when t ends, the receiver
// last. It fails t when the telemetry cannot be made or does not trace.
func Exporting(t testing.TB, service string) (*Receiver, *telemetry.Telemetry) {
	t.Helper()
	rcv := Start()
	t.Cleanup(rcv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL())
	t.Setenv("OTEL_SDK_DISABLED", "")
	tel, err := telemetry.New(context.Background(), telemetry.Options{Service: service})
	if err != nil {
		t.Fatal(err)
	}
	if !tel.Tracing() {
		t.Fatal("tracing is off with an endpoint set")
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return rcv, tel
}
