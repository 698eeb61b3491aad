package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"collab/channel"
	"collab/delegate"
	"collab/mcpserver"
	"collab/natsbus"
	"collab/tree"
)

func runMCP(ctx context.Context, args []string, getenv env, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("mcp", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: collab mcp --agent A --channel C

Serve the bus to a model CLI over MCP on standard input and output, as
agent A on channel C. Tools: channel_send, channel_read, channel_peek, who,
task_list, task_claim, task_update, send_and_wait. The agent and channel
come from these flags only, never from a tool's arguments. Logs go to
standard error.

For Claude Code, in an --mcp-config file:
  {"mcpServers": {"collab": {"command": "collab", "args": ["mcp", "--agent", "claude", "--channel", "dev"]}}}

Flags:
`)
		fs.PrintDefaults()
	}
	var agent, ch string
	fs.StringVar(&agent, "agent", "", "the agent every tool acts as (env COLLAB_AGENT)")
	fs.StringVar(&ch, "channel", "", "the channel (env COLLAB_CHANNEL, then COLLAB_SESSION)")
	poll := fs.Duration("poll", delegate.DefaultPoll, "how often send_and_wait looks for the reply")
	verbose := fs.BoolP("verbose", "v", false, "log every failed tool call to standard error")
	nf := addNATSFlags(fs)
	rootf := rootFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("mcp: unexpected argument %q", fs.Arg(0))
	}
	agent = cmp.Or(agent, getenv("COLLAB_AGENT"))
	ch = cmp.Or(ch, getenv("COLLAB_CHANNEL"), getenv("COLLAB_SESSION"))
	if agent == "" || ch == "" {
		return usageErrorf("mcp: --agent and --channel are required (or COLLAB_AGENT and COLLAB_CHANNEL)")
	}
	for _, n := range []struct{ kind, v string }{{"agent", agent}, {"channel", ch}} {
		if err := tree.CheckName(n.kind, n.v); err != nil {
			return usageErrorf("mcp: %v", err)
		}
	}
	if *poll <= 0 {
		return usageErrorf("mcp: --poll must be positive")
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg := mcpserver.Config{
		Root: tree.Resolve(*rootf, getenv), Agent: agent, Channel: ch, Host: hostname(),
		Hops: -1, Logger: logger, Poll: *poll,
	}
	// Inside a watcher's model run, what the agent sends is one hop deeper
	// than the message it answers.
	if h, err := strconv.Atoi(getenv("COLLAB_HOPS")); err == nil && h >= 0 {
		cfg.Hops = h
	}
	if o, ok := nf.options(getenv, natsbus.ConnName(agent+"-mcp", hostname()), logger); ok {
		bus, err := connectOptional(ctx, o, stderr)
		if err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
		if bus != nil {
			defer bus.Close()
			cfg.Publish = bus.PublishMessage
			cfg.Wake = func(context.Context) (<-chan string, func(), error) {
				wake := make(chan string, 64)
				sub, err := bus.Subscribe([]string{ch}, func(m channel.Message) {
					select {
					case wake <- m.File:
					default: // the next poll finds it
					}
				})
				if err != nil {
					return nil, nil, err
				}
				return wake, sub.Stop, nil
			}
		}
	}
	s, err := mcpserver.New(cfg)
	if err != nil {
		return err
	}
	start := time.Now()
	err = s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	logger.Info("mcp session ended", "agent", agent, "took", time.Since(start).Round(time.Millisecond), "err", err)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}

// nopWriteCloser is a writer whose Close does nothing: the server must not
// close the process's standard output.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
