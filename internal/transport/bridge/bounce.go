package bridge

import (
	"context"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/safedir"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// ReportAgent is the name a bridge's delivery reports are posted in
// (unsigned: a bridge has no key of its own).
const ReportAgent = "collab-bridge"

// Reports sweeps every channel of cfg's tree for delivery reports
// (delivery.Sweeper), every delivery.DefaultSweepEvery, as a watcher
// does its own channels: the messages of the channels only remote
// watchers (collab watch --remote, which do not sweep) or none read are
// reported too. It runs until ctx ends; part of [Run].
func Reports(ctx context.Context, cfg Config) error {
	return reports(ctx, cfg, delivery.DefaultSweepEvery, 0)
}

// reports is Reports sweeping every every, with grace (0: the default).
func reports(ctx context.Context, cfg Config, every, grace time.Duration) error {
	s := &delivery.Sweeper{
		Reporter: &delivery.Reporter{Root: cfg.Root, Agent: ReportAgent, Host: cfg.Host, Now: cfg.Now},
		Verifier: cfg.Verifier, Host: cfg.Host, Grace: grace,
	}
	if cfg.Logger != nil {
		log := cfg.Logger
		s.Log = func(msg string, m *channel.Message, report string, err error) {
			if err != nil {
				log.Warn("bridge: "+msg, "msg_id", m.ID, "channel", m.SessionID, "err", err)
				return
			}
			log.Info("bridge: "+msg, "msg_id", m.ID, "channel", m.SessionID, "reply_id", report)
		}
	}
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		next := s.Sweep(channels(cfg.Root))
		t.Reset(delivery.SweepAfter(every, next, now()))
	}
}

// channels lists the tree's channels (none when the folder cannot be
// read: the next sweep tries again).
func channels(root tree.Root) []string {
	d, err := safedir.Open(root.Channels())
	if err != nil {
		return nil
	}
	defer d.Close()
	ents, err := d.ReadDir()
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && tree.CheckName("channel", e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	return out
}
