package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/telemetry/otlptest"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// otel is the overhead of OpenTelemetry on the reply path: collab watch
// (poll 1 s, fsnotify, trust known) with the demo's stand-in as its
// command CLI, on an empty channel, each message signed by a sender its
// keyring trusts: from Writer.Post returning to the reply's file
// appearing, the median over the messages of a run, once with no OTEL_*
// variable and once with OTEL_EXPORTER_OTLP_ENDPOINT naming an in-process
// OTLP/HTTP receiver on loopback (package otlptest: every span and
// metric decoded), the two watchers one after the other in each run,
// their order alternating from run to run.
func (b *bench) otel(ctx context.Context) []Figure {
	n := 4 * b.size.bigReplies
	none := spec{name: "watcher reply, no OTLP", unit: "ms",
		note: fmt.Sprintf("collab watch with the stand-in: Writer.Post returning → the reply's file (inotify), median of %d messages per run, no OTEL_* variable", n)}
	with := spec{name: "watcher reply, OTLP to a local receiver", unit: "ms",
		note: "the same with OTEL_EXPORTER_OTLP_ENDPOINT set to an in-process OTLP/HTTP receiver (traces: a hop span and its stage spans per message; metrics)"}
	over := spec{name: "OTLP overhead on the watcher reply", unit: "%", max: 5,
		note: "(with − none) / none, of the two figures above (the medians of the runs); the runs' own ratios are in the progress output"}
	fail := func(err error) []Figure {
		return []Figure{none.figure(nil, err), with.figure(nil, err), over.figure(nil, err)}
	}
	bin, standin, err := b.binaries(ctx)
	if err != nil {
		return fail(err)
	}
	root, signer, err := b.otelFixture()
	if err != nil {
		return fail(err)
	}
	rcv := otlptest.Start()
	defer rcv.Close()
	defer unsetOTEL()()
	vals, err := b.repeat(ctx, "reply none otlp ms, run's overhead %", 3, func(run int) ([]float64, error) {
		var lat [2]float64
		for i := range 2 {
			mode := (i + run) % 2 // 0: none, 1: OTLP
			if mode == 1 {
				os.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL())
			}
			l, _, err := replyLatency(ctx, bin, standin, root, signer, "otelbot-"+strconv.Itoa(run+1)+"-"+strconv.Itoa(mode), n)
			os.Unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT")
			if err != nil {
				return nil, err
			}
			lat[mode] = l
		}
		return []float64{lat[0], lat[1], (lat[1] - lat[0]) / lat[0] * 100}, nil
	})
	if err == nil && len(rcv.Spans()) == 0 {
		err = fmt.Errorf("the receiver got no span")
	}
	fmt.Fprintf(b.progress, "   OTLP receiver: %d spans, %d metric points\n", len(rcv.Spans()), len(rcv.Metrics()))
	var overhead []float64
	if len(vals[0]) > 0 {
		overhead = []float64{(median(vals[1]) - median(vals[0])) / median(vals[0]) * 100}
	}
	return []Figure{none.figure(vals[0], err), with.figure(vals[1], err), over.figure(overhead, err)}
}

// otelFixture is an empty tree with the backlog channel's folder and a
// sender key its keyring trusts.
func (b *bench) otelFixture() (tree.Root, *signing.Signer, error) {
	root := tree.Root(filepath.Join(b.dir, "otel"))
	if err := os.MkdirAll(root.Channel(backlogChannel), 0o755); err != nil {
		return "", nil, err
	}
	k, err := signing.NewKey(filepath.Join(b.dir, "otel-sender.key"), senderAgent, false)
	if err != nil {
		return "", nil, err
	}
	if err := keyring.Open(root.Keys()).Trust(senderAgent, k.PublicKey()); err != nil {
		return "", nil, err
	}
	return root, k, nil
}

// unsetOTEL removes the OTEL_* variables the bench inherited, so that
// only the runs that set one export; the returned func restores them.
func unsetOTEL() (restore func()) {
	var saved []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OTEL_") {
			saved = append(saved, kv)
			k, _, _ := strings.Cut(kv, "=")
			os.Unsetenv(k)
		}
	}
	return func() {
		for _, kv := range saved {
			k, v, _ := strings.Cut(kv, "=")
			os.Setenv(k, v)
		}
	}
}
