package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/live"
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// Live sessions of Gemini CLI (collab watch --live --cli gemini, ACP), as
// live-claude measures Claude Code's: the real Gemini CLI against
// fakemodel under an in-process watcher, one process per message, then
// --live, each over liveMessages messages after one warm-up.

var liveGeminiSpecs = [4]spec{
	{name: "gemini, one process per message: message → reply p50", unit: "ms"},
	{name: "gemini, one process per message: message → reply p99", unit: "ms"},
	{name: "gemini --live: message → reply p50", unit: "ms", max: 150},
	{name: "gemini --live: message → reply p99", unit: "ms"},
}

func (b *bench) liveGemini(ctx context.Context) []Figure {
	var figs []Figure
	for i, on := range []bool{false, true} {
		what := "gemini live=" + fmt.Sprint(on)
		vals, err := b.repeat(ctx, what, 2, func(run int) ([]float64, error) {
			lat, err := b.liveGeminiRun(ctx, on, run)
			if err != nil {
				return nil, err
			}
			slices.Sort(lat)
			return []float64{ms(percentile(lat, 50)), ms(percentile(lat, 99))}, nil
		})
		figs = append(figs, liveGeminiSpecs[2*i].figure(vals[0], err), liveGeminiSpecs[2*i+1].figure(vals[1], err))
	}
	return figs
}

// liveGeminiRun answers liveMessages messages (and a warm-up) with Gemini
// CLI, live or not, and returns each one's time to its reply.
func (b *bench) liveGeminiRun(ctx context.Context, on bool, run int) ([]time.Duration, error) {
	path, err := fakemodel.FindCLI(fakemodel.GeminiCLI)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(b.dir, fmt.Sprintf("live-gemini-%v-%d", on, run))
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	srv := fakemodel.Start(nil)
	defer srv.Close()
	c, err := srv.Setup(fakemodel.GeminiCLI, path, base)
	if err != nil {
		return nil, err
	}
	root := tree.Root(filepath.Join(base, "tree"))
	a := &gemini.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env}
	cfg := watcher.Config{
		Root: root, Agent: benchAgent, Channels: []string{benchChannel}, Runner: a, CLI: "gemini", Workdir: c.Dir,
		Timeout: time.Minute, Poll: latencyPoll, Grace: 5 * time.Second, Rate: -1, PairRate: -1,
		Wakers: []watcher.Waker{fswake.Channels{Root: root}},
	}
	if on {
		pool := live.NewPool(&live.Gemini{Adapter: a}, live.Config{})
		defer pool.Close() // after the watcher has stopped
		cfg.Live = pool
	}
	if err := os.MkdirAll(root.Channel(benchChannel), 0o755); err != nil {
		return nil, err
	}
	logger, closeLog, err := watchLogger(root, benchAgent)
	if err != nil {
		return nil, err
	}
	defer closeLog()
	cfg.Logger = logger
	stop, err := startWatcher(ctx, cfg, func() bool { _, err := presence.Read(root, benchAgent); return err == nil })
	if err != nil {
		return nil, err
	}
	defer stop()
	w := &channel.Writer{Root: root}
	var lat []time.Duration
	for i := range liveMessages + 1 {
		m := channel.Message{SessionID: benchChannel, From: senderAgent, To: benchAgent, Content: channel.Content{Text: fmt.Sprintf("question %d", i)}}
		if err := w.Post(&m); err != nil {
			return nil, err
		}
		posted := time.Now()
		if err := awaitReply(ctx, root, m.ID); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if i > 0 {
			lat = append(lat, time.Since(posted))
		}
	}
	return lat, nil
}
