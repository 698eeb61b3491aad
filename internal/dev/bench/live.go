package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/live"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/fakemodel"
	"github.com/collabdev/collab/presence"
	"github.com/collabdev/collab/watcher"
)

// Live sessions (collab watch --live): the real Claude Code (found as the
// tests find it: $COLLAB_CLI_BIN_DIR, /tmp/npmcli/node_modules/.bin,
// PATH) against fakemodel, which answers at once, under an in-process
// watcher as collab watch runs it (poll 1 s, fsnotify, guards off). Each
// message is posted once the reply to the one before has landed; the
// figure is from Writer.Post returning to the reply's file being seen
// (polled every 2 ms): the whole per-message overhead, the fake model's
// few milliseconds included. One process per message, then --live, each
// over liveMessages messages after one warm-up (the --live warm-up starts
// the process).

const liveMessages = 20

// liveCLI is one CLI the live rows measure: its name in the figures and
// the watcher, fakemodel's name for it, and its adapter and live starter
// for a CLI fakemodel set up.
type liveCLI struct {
	name, fake string
	runner     func(c *fakemodel.CLI) (watcher.Runner, live.Starter)
}

var (
	liveClaudeCLI = liveCLI{"claude", fakemodel.ClaudeCode, func(c *fakemodel.CLI) (watcher.Runner, live.Starter) {
		a := &claude.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env}
		return a, &live.Claude{Adapter: a}
	}}
	liveCodexCLI = liveCLI{"codex", fakemodel.CodexCLI, func(c *fakemodel.CLI) (watcher.Runner, live.Starter) {
		a := &codex.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env}
		return a, &live.Codex{Adapter: a} // one codex exec per message, or one codex app-server
	}}
	liveGeminiCLI = liveCLI{"gemini", fakemodel.GeminiCLI, func(c *fakemodel.CLI) (watcher.Runner, live.Starter) {
		a := &gemini.Adapter{Bin: c.Path, Model: c.Model, Env: c.Env}
		return a, &live.Gemini{Adapter: a} // ACP
	}}
)

func (b *bench) liveClaude(ctx context.Context) []Figure { return b.liveRows(ctx, liveClaudeCLI) }
func (b *bench) liveCodex(ctx context.Context) []Figure  { return b.liveRows(ctx, liveCodexCLI) }
func (b *bench) liveGemini(ctx context.Context) []Figure { return b.liveRows(ctx, liveGeminiCLI) }

// liveRows measures l one process per message, then --live.
func (b *bench) liveRows(ctx context.Context, l liveCLI) []Figure {
	specs := [4]spec{
		{name: l.name + ", one process per message: message → reply p50", unit: "ms"},
		{name: l.name + ", one process per message: message → reply p99", unit: "ms"},
		{name: l.name + " --live: message → reply p50", unit: "ms", max: 150},
		{name: l.name + " --live: message → reply p99", unit: "ms"},
	}
	var figs []Figure
	for i, on := range []bool{false, true} {
		what := l.name + " live=" + fmt.Sprint(on)
		vals, err := b.repeat(ctx, what, 2, func(run int) ([]float64, error) {
			lat, err := b.liveRun(ctx, l, on, run)
			if err != nil {
				return nil, err
			}
			slices.Sort(lat)
			return []float64{ms(percentile(lat, 50)), ms(percentile(lat, 99))}, nil
		})
		figs = append(figs, specs[2*i].figure(vals[0], err), specs[2*i+1].figure(vals[1], err))
	}
	return figs
}

// liveRun answers liveMessages messages (and a warm-up) with l's CLI,
// live or not, and returns each one's time to its reply.
func (b *bench) liveRun(ctx context.Context, l liveCLI, on bool, run int) ([]time.Duration, error) {
	path, err := fakemodel.FindCLI(l.fake)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(b.dir, fmt.Sprintf("live-%s-%v-%d", l.name, on, run))
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	srv := fakemodel.Start(nil)
	defer srv.Close()
	c, err := srv.Setup(l.fake, path, base)
	if err != nil {
		return nil, err
	}
	root := tree.Root(filepath.Join(base, "tree"))
	runner, starter := l.runner(c)
	cfg := watcher.Config{
		Root: root, Agent: benchAgent, Channels: []string{benchChannel}, Runner: runner, CLI: l.name, Workdir: c.Dir,
		Timeout: time.Minute, Poll: latencyPoll, Grace: 5 * time.Second, Rate: -1, PairRate: -1,
		Wakers: []watcher.Waker{fswake.Channels{Root: root}},
	}
	if on {
		pool := live.NewPool(starter, live.Config{})
		defer pool.Close() // after the watcher has stopped
		cfg.Live = pool
	}
	return liveAnswer(ctx, root, cfg)
}

// liveAnswer runs a watcher of cfg on root, posts liveMessages messages
// (and a warm-up), each once the one before has its reply, and returns
// each one's time to its reply.
func liveAnswer(ctx context.Context, root tree.Root, cfg watcher.Config) ([]time.Duration, error) {
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

// awaitReply polls the channel's newest messages for a reply to id.
func awaitReply(ctx context.Context, root tree.Root, id string) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		msgs, _ := channel.Recent(root, benchChannel, "", 3)
		for _, m := range msgs {
			if m.Metadata.InReplyTo == id {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return errors.New("no reply in a minute")
}
