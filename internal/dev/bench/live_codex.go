package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/collabdev/collab/internal/agent/live"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
	"github.com/collabdev/collab/watcher"
)

// Live sessions of the Codex CLI: live-claude's measure (see live.go)
// with the real Codex CLI, one codex exec per message, then --live (one
// codex app-server).

var liveCodexSpecs = [4]spec{
	{name: "codex, one process per message: message → reply p50", unit: "ms"},
	{name: "codex, one process per message: message → reply p99", unit: "ms"},
	{name: "codex --live: message → reply p50", unit: "ms", max: 150},
	{name: "codex --live: message → reply p99", unit: "ms"},
}

func (b *bench) liveCodex(ctx context.Context) []Figure {
	var figs []Figure
	for i, on := range []bool{false, true} {
		what := "codex live=" + fmt.Sprint(on)
		vals, err := b.repeat(ctx, what, 2, func(run int) ([]float64, error) {
			lat, err := b.liveCodexRun(ctx, on, run)
			if err != nil {
				return nil, err
			}
			slices.Sort(lat)
			return []float64{ms(percentile(lat, 50)), ms(percentile(lat, 99))}, nil
		})
		figs = append(figs, liveCodexSpecs[2*i].figure(vals[0], err), liveCodexSpecs[2*i+1].figure(vals[1], err))
	}
	return figs
}

// liveCodexRun answers liveMessages messages (and a warm-up) with the
// Codex CLI, live or not, and returns each one's time to its reply.
func (b *bench) liveCodexRun(ctx context.Context, on bool, run int) ([]time.Duration, error) {
	path, err := fakemodel.FindCLI(fakemodel.CodexCLI)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(b.dir, fmt.Sprintf("live-codex-%v-%d", on, run))
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	srv := fakemodel.Start(nil)
	defer srv.Close()
	c, err := srv.Setup(fakemodel.CodexCLI, path, base)
	if err != nil {
		return nil, err
	}
	root := tree.Root(filepath.Join(base, "tree"))
	a := &codex.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env}
	cfg := watcher.Config{
		Root: root, Agent: benchAgent, Channels: []string{benchChannel}, Runner: a, CLI: "codex", Workdir: c.Dir,
		Timeout: time.Minute, Poll: latencyPoll, Grace: 5 * time.Second, Rate: -1, PairRate: -1,
		Wakers: []watcher.Waker{fswake.Channels{Root: root}},
	}
	if on {
		pool := live.NewPool(&live.Codex{Adapter: a}, live.Config{})
		defer pool.Close() // after the watcher has stopped
		cfg.Live = pool
	}
	return liveAnswer(ctx, root, cfg)
}
