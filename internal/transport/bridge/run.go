package bridge

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/transport/natsbus"
)

// Run is a whole bridge on bus (collab bridge): a Server for cfg
// answering the requests, its heartbeats published as presence, and a
// Publisher putting every message that lands in a channel on the stream
// (on its first start, each channel's messages as recent as backfill).
// It runs until ctx ends or either part stops, and returns what they
// returned.
func Run(ctx context.Context, bus *natsbus.Bus, cfg Config, backfill time.Duration) error {
	if cfg.Presence == nil {
		cfg.Presence = bus.PublishPresence
	}
	srv := New(cfg)
	pub := &Publisher{Root: cfg.Root, Stream: bus, StateFile: StatePath(cfg.Root, cfg.Host), Backfill: backfill, Logger: srv.log}
	parts := []func(context.Context) error{func(ctx context.Context) error { return srv.Serve(ctx, bus.Conn()) }, pub.Run,
		func(ctx context.Context) error { return Reports(ctx, srv.cfg) }} // delivery reports
	metrics, err := metricsPart(&cfg)
	if err != nil {
		return err
	}
	if metrics != nil {
		parts = append(parts, metrics)
	}
	srv.log.Info("bridge: serving", "root", string(cfg.Root), "subjects", SubscribeSubject, "queue", QueueGroup, "workers", srv.cfg.Workers, "metrics", cfg.Metrics)
	return together(ctx, parts...)
}

// together runs parts until ctx ends or one of them stops, and returns
// what they returned.
func together(ctx context.Context, parts ...func(context.Context) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(parts))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, run := range parts {
		wg.Go(func() {
			errs[i] = run(ctx)
			cancel()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
