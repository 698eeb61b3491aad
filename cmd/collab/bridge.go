package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/collabdev/collab/internal/agent/watchsetup"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

func runBridge(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cmdFlags("bridge", helpText("bridge"), stderr)
	c := addCommon(fs, withNATS, withRoot, withKeyring)
	backfill := fs.Duration("backfill", bridge.DefaultBackfill, "on the first start, publish each channel's messages this recent")
	workers := fs.Int("workers", bridge.DefaultWorkers, "requests performed at once")
	logLevel := fs.String("log-level", defaultLogLevel, "debug, info, warn or error")
	metrics := fs.String("metrics", "", bridge.MetricsUsage)
	if err := parseNone(fs, args, getenv); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil || *workers <= 0 || *backfill <= 0 {
		return usageErrorf("bridge: --workers and --backfill must be positive, --log-level debug, info, warn or error")
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	host := hostname()
	o, ok := c.nf.options(getenv, natsbus.ConnName("bridge", host), logger)
	if !ok {
		return usageErrorf("bridge: no server: use --nats URL or set NATS_URL")
	}
	root := c.tree(getenv)
	if err := root.Check(); err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	// The bridge hands the keyring to every remote host (the keys op) and
	// checks every remote write against it: one others could rewrite is
	// refused, as a watcher refuses it.
	ring, err := watchsetup.CheckedKeyring("bridge", root, *c.ring, signing.Known, true, stderr)
	if err != nil {
		return err
	}
	o.KeepTrying = true // a bridge started before the server waits for it
	b, err := natsbus.Connect(ctx, o)
	if err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	defer b.Close()

	return bridge.Run(ctx, b, bridge.Config{Root: root, Keyring: ring, Verifier: signing.NewVerifier(ring), Workers: *workers, Host: host, Logger: logger, Metrics: *metrics}, *backfill)
}
