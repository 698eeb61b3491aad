// Package telemetry is collab's OpenTelemetry: the providers a process
// makes from the standard OTEL_* variables, the instruments every process
// records on, and the trace context a message carries.
//
// # Variables
//
// The OpenTelemetry SDK reads the standard variables itself:
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT), OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER,
// OTEL_METRIC_EXPORT_INTERVAL, OTEL_BSP_*. Traces are exported when an
// endpoint for them is set, metrics likewise, over OTLP/HTTP (protobuf);
// OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER / OTEL_METRICS_EXPORTER
// "none", exports nothing. With nothing to export the providers are the
// API's no-op ones: a span or a measurement costs a few nanoseconds.
//
// # Processes
//
// A process calls [Setup] once (collab's main), which makes the process's
// [Telemetry] ([Default]) and installs its providers as the global ones;
// [Telemetry.Shutdown] flushes what is buffered within [ShutdownTimeout].
// A process that serves Prometheus text ([Options.Prometheus]: collab
// serve, collab bridge) gets a registry whatever the variables say:
// [Telemetry.Handler] serves it, and [Telemetry.Register] adds
// collectors computed at scrape.
//
// # Trace context
//
// A message carries the W3C trace context of the span that posted it in
// two metadata extensions, traceparent and tracestate ([Inject],
// [Extract]). They are extras (channel/extras.go): a signed message's
// are read only when its extras signature covers them, and a malformed
// value is ignored, never an error. A watcher's reply carries its hop's
// span, and a model run gets it as TRACEPARENT in its environment (the
// OpenTelemetry convention for processes), which collab send takes up
// ([FromEnv]): a delegation or a reply chain is one trace.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of collab's spans and metrics.
const ScopeName = "github.com/collabdev/collab"

// ShutdownTimeout bounds the flush at exit: an unreachable collector
// does not hold a process that is done.
const ShutdownTimeout = 5 * time.Second

// Options says what a process wants beyond the variables.
type Options struct {
	// Service is the service.name when OTEL_SERVICE_NAME does not say;
	// default "collab".
	Service string
	// Prometheus keeps a registry the process serves at /metrics
	// ([Telemetry.Handler]): the instruments are read into it at scrape.
	Prometheus bool
	// Getenv reads the variables; default os.Getenv. The SDK's exporters
	// read the endpoint, headers and intervals from the process's
	// environment themselves.
	Getenv func(string) string
}

// Telemetry is one process's providers and instruments. The zero of
// *Telemetry (nil) records nothing; every method may be called on it.
type Telemetry struct {
	tracer   trace.Tracer
	traces   bool // spans are exported
	metrics  bool // measurements are exported or served
	meter    metric.Meter
	inst     instruments
	reg      *prometheus.Registry
	shutdown []func(context.Context) error
}

var (
	defaultMu sync.Mutex
	current   *Telemetry
)

// Default returns the process's Telemetry ([Setup]); without one, a
// Telemetry that records nothing.
func Default() *Telemetry {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	return current
}

// SetDefault makes t the process's Telemetry ([Default]) and returns the
// one it replaces; for tests and the bench, which make theirs with [New].
func SetDefault(t *Telemetry) (previous *Telemetry) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	previous, current = current, t
	return previous
}

// Setup makes the process's Telemetry with [New], installs its providers
// as the global ones and makes it [Default].
func Setup(ctx context.Context, opt Options) (*Telemetry, error) {
	t, err := New(ctx, opt)
	if err != nil {
		return nil, err
	}
	otel.SetTextMapPropagator(propagation.TraceContext{})
	if tp, ok := t.tracer.(interface{ TracerProvider() trace.TracerProvider }); ok {
		otel.SetTracerProvider(tp.TracerProvider())
	}
	SetDefault(t)
	return t, nil
}

// Enabled reports which signals the variables read by getenv export.
func Enabled(getenv func(string) string) (traces, metrics bool) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, false
	}
	any := getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	on := func(signal string) bool {
		if strings.EqualFold(getenv("OTEL_"+signal+"_EXPORTER"), "none") {
			return false
		}
		return any || getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
	}
	return on("TRACES"), on("METRICS")
}

// New makes a Telemetry from the variables and opt: exporters for what
// the variables ask (nothing when they ask nothing), a Prometheus
// registry when opt says so. Its providers are not installed globally.
func New(ctx context.Context, opt Options) (*Telemetry, error) {
	getenv := opt.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	traces, metrics := Enabled(getenv)
	t := &Telemetry{traces: traces}
	var res *resource.Resource
	if traces || metrics {
		name := opt.Service
		if name == "" {
			name = "collab"
		}
		var err error
		res, err = resource.Merge(resource.NewSchemaless(attribute.String("service.name", name)), resource.Environment())
		if err != nil {
			res = resource.NewSchemaless(attribute.String("service.name", name))
		}
	}
	if err := t.setupTraces(ctx, traces, res); err != nil {
		return nil, err
	}
	if err := t.setupMetrics(ctx, metrics, opt.Prometheus, res); err != nil {
		_ = t.Shutdown(ctx)
		return nil, err
	}
	return t, nil
}

// providerTracer is a tracer that remembers its provider, for Setup.
type providerTracer struct {
	trace.Tracer
	tp trace.TracerProvider
}

func (p providerTracer) TracerProvider() trace.TracerProvider { return p.tp }

func (t *Telemetry) setupTraces(ctx context.Context, on bool, res *resource.Resource) error {
	if !on {
		t.tracer = tracenoop.NewTracerProvider().Tracer(ScopeName)
		return nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return fmt.Errorf("telemetry: trace exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t.tracer = providerTracer{tp.Tracer(ScopeName), tp}
	t.shutdown = append(t.shutdown, tp.Shutdown)
	return nil
}

func (t *Telemetry) setupMetrics(ctx context.Context, on, prom bool, res *resource.Resource) error {
	var opts []sdkmetric.Option
	if on {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return fmt.Errorf("telemetry: metric exporter: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	if prom {
		t.reg = prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(t.reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
		if err != nil {
			return fmt.Errorf("telemetry: prometheus exporter: %w", err)
		}
		opts = append(opts, sdkmetric.WithReader(exp))
	}
	if len(opts) == 0 {
		t.meter = metricnoop.NewMeterProvider().Meter(ScopeName)
	} else {
		if res != nil {
			opts = append(opts, sdkmetric.WithResource(res))
		}
		mp := sdkmetric.NewMeterProvider(opts...)
		t.meter = mp.Meter(ScopeName)
		t.metrics = true
		t.shutdown = append(t.shutdown, mp.Shutdown)
		if on {
			otel.SetMeterProvider(mp)
		}
	}
	return t.inst.init(t.meter)
}

// Shutdown flushes what is buffered and stops the exporters, within
// ShutdownTimeout at most.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	t.shutdown = nil
	return errors.Join(errs...)
}

// Metering reports whether measurements go anywhere (exported, or
// served at /metrics): without, a caller may skip the work of making them.
func (t *Telemetry) Metering() bool { return t != nil && t.metrics }

// Tracing reports whether spans are exported: without, a caller may skip
// the work of building them.
func (t *Telemetry) Tracing() bool { return t != nil && t.traces }

// Tracer returns collab's tracer (a no-op one for a nil Telemetry).
func (t *Telemetry) Tracer() trace.Tracer {
	if t == nil || t.tracer == nil {
		return tracenoop.NewTracerProvider().Tracer(ScopeName)
	}
	return t.tracer
}

// Handler serves the Prometheus text of the registry (404 without one).
func (t *Telemetry) Handler() http.Handler {
	if t == nil || t.reg == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(t.reg, promhttp.HandlerOpts{})
}

// Gatherer is the Prometheus registry, nil without one.
func (t *Telemetry) Gatherer() prometheus.Gatherer {
	if t == nil || t.reg == nil {
		return nil
	}
	return t.reg
}

// Register adds c to the Prometheus registry; without one it does
// nothing.
func (t *Telemetry) Register(c prometheus.Collector) error {
	if t == nil || t.reg == nil {
		return nil
	}
	return t.reg.Register(c)
}

// Start is a process's telemetry in one call (collab's main): [Setup]
// for the command args[0] names (service.name "collab-CMD"; a Prometheus registry for
// serve and bridge, which serve /metrics), and ctx with the trace context
// of TRACEPARENT when set ([FromEnv]). A Setup that fails is told to
// stderr and the process goes on without telemetry. end flushes, within
// ShutdownTimeout.
func Start(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) (context.Context, func()) {
	cmd := ""
	if len(args) > 0 {
		cmd = args[0]
	}
	opt := Options{Service: "collab", Prometheus: cmd == "serve" || cmd == "bridge", Getenv: getenv}
	if cmd != "" && len(cmd) <= 16 && strings.Trim(cmd, "abcdefghijklmnopqrstuvwxyz") == "" {
		opt.Service = "collab-" + cmd // a command's name, not any argument
	}
	t, err := Setup(ctx, opt)
	if err != nil {
		fmt.Fprintf(stderr, "collab: telemetry off: %v\n", err)
		return ctx, func() {}
	}
	otel.SetErrorHandler(errorsTo(stderr, time.Minute))
	if p := getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); strings.HasPrefix(p, "grpc") && (t.Tracing() || t.Metering()) {
		fmt.Fprintf(stderr, "collab: telemetry: OTEL_EXPORTER_OTLP_PROTOCOL=%s: collab exports OTLP over HTTP (http/protobuf) only\n", p)
	}
	return FromEnv(ctx, getenv), func() {
		if err := t.Shutdown(ctx); err != nil {
			fmt.Fprintf(stderr, "collab: telemetry: %v\n", err)
		}
	}
}

// Run calls run (collab's run) under [Start]'s telemetry for the command
// args[0] names, then flushes it: collab's main in one call.
func Run[E ~func(string) string](ctx context.Context, args []string, getenv E, stdin io.Reader, stdout, stderr io.Writer,
	run func(context.Context, []string, E, io.Reader, io.Writer, io.Writer) error) error {
	ctx, end := Start(ctx, args, getenv, stderr)
	defer end()
	return run(ctx, args, getenv, stdin, stdout, stderr)
}

// errorsTo is an OpenTelemetry error handler that writes to w, one error
// per every at most: an unreachable collector is said, not repeated at
// each export.
func errorsTo(w io.Writer, every time.Duration) otel.ErrorHandler {
	var mu sync.Mutex
	var last time.Time
	return otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); last.IsZero() || now.Sub(last) >= every {
			last = now
			fmt.Fprintf(w, "collab: telemetry: %v\n", err)
		}
	})
}
