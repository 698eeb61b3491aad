package watchsetup

import (
	"context"
	"fmt"
	"os"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/telemetry"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// connectNATS connects to NATS when s has a server: the watcher publishes
// what it writes, is woken by what others publish, and hears collab jobs
// kill at once. The connection is closed (drained) by w.Close.
func (w *Watch) connectNATS(ctx context.Context, cfg *watcher.Config, s Settings) error {
	if s.NATS == nil || s.NATS.URL == "" {
		return nil
	}
	o := *s.NATS
	o.Name = natsbus.ConnName(s.Agent, Hostname())
	o.Logger = cfg.Logger
	// Unreachable at start: keep trying in the background (files
	// deliver meanwhile); bad credentials stop the watcher now.
	o.KeepTrying = true
	bus, err := natsbus.Connect(ctx, o)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	w.closes = append(w.closes, func() { bus.Drain() })
	announce := make(chan channel.Message, 256)
	cfg.Announce = announce
	cfg.Publisher = countedPublisher{bus, telemetry.Default()}
	cfg.Wakers = append(cfg.Wakers, natsbus.Waker{Bus: bus, OnMessage: func(m channel.Message) {
		select {
		case announce <- m:
		default: // full: the wake-up and the poll find it anyway
		}
	}})
	// collab jobs kill: look at the kill file now, not at the next poll.
	kills := make(chan string, 1)
	ksub, err := bus.SubscribeKills(s.Agent, func(job string) {
		select {
		case kills <- job:
		default: // one pending is enough: the watcher checks the file
		}
	})
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	w.closes = append(w.closes, func() { ksub.Stop() })
	cfg.Kills = kills
	return nil
}

// Hostname is this host's name ("" when unknown), as NATS connections
// are named.
func Hostname() string {
	h, _ := os.Hostname()
	return h
}

// countedPublisher counts the publishes that fail in collab.nats.errors
// (op publish_message, publish_presence).
type countedPublisher struct {
	watcher.Publisher
	tel *telemetry.Telemetry
}

func (p countedPublisher) PublishMessage(ctx context.Context, m *channel.Message) error {
	err := p.Publisher.PublishMessage(ctx, m)
	if err != nil {
		p.tel.NATSError(ctx, "publish_message")
	}
	return err
}

func (p countedPublisher) PublishPresence(s presence.Status) error {
	err := p.Publisher.PublishPresence(s)
	if err != nil {
		p.tel.NATSError(context.Background(), "publish_presence")
	}
	return err
}
