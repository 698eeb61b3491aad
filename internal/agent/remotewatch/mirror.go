package remotewatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/collabdev/collab/internal/agent/watchsetup"
	"github.com/collabdev/collab/internal/identity/keyring"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/remote"
)

// Mirror is the mirror of watch --remote while it runs: its tree; Ended,
// closed when it has stopped, Err then saying why (nil: stopped);
// Caught, closed once it first caught up (nil: no such signal); and
// Stop, which ends it after a drain of at most remote.DrainBudget.
type Mirror struct {
	Root   tree.Root
	Ended  <-chan struct{}
	Caught <-chan struct{}
	Err    error
	Stop   func()
}

// CatchUp bounds the wait for the mirror's first catch-up before the
// watcher starts; past it the watcher starts anyway and its polls find
// what the mirror brings later.
const CatchUp = time.Minute

// AwaitCaughtUp waits until the mirror has first caught up (the stream's
// pending messages in the mirror, the keyring copied), so the watcher
// starts with the keys and the messages it should see; at most max. A
// mirror that stops first is an error.
func (m *Mirror) AwaitCaughtUp(ctx context.Context, max time.Duration) error {
	if m.Caught == nil {
		return nil
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-m.Caught:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	case <-m.Ended:
		if m.Err != nil {
			return fmt.Errorf("watch: mirror: %w", m.Err)
		}
		return errors.New("watch: the mirror stopped before it caught up")
	}
	return nil
}

// StartMirror starts the mirror of s.Agent's channels under state. The
// mirror runs until Stop, not until ctx: the watcher's last writes (the
// reply of a run finishing in its grace, the OFFLINE heartbeat) come
// after ctx is done.
func StartMirror(ctx context.Context, c *remote.Client, s watchsetup.Settings, state string, logger *slog.Logger) (*Mirror, error) {
	mc := remote.MirrorConfig{Client: c, Channels: s.Channels, Dir: string(remote.MirrorTree(state)), Logger: logger}
	if s.Keyring != "" {
		// --keyring: verify with it, kill requests included; no copy.
		mc.LocalKeys = true
		mc.Verifier = signing.NewVerifier(keyring.In(tree.Root(mc.Dir), s.Keyring))
	}
	rm, err := remote.NewMirror(mc)
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ended := make(chan struct{})
	m := &Mirror{Root: rm.Root(), Ended: ended, Caught: rm.CaughtUp()}
	go func() {
		m.Err = rm.Run(mctx)
		if m.Err == nil && mctx.Err() == nil {
			m.Err = errors.New("the mirror stopped")
		}
		close(ended)
	}()
	m.Stop = func() {
		cancel()
		<-ended
	}
	return m, nil
}

// stderr is h's Stderr, or a discard.
func stderr(h watchsetup.Host) io.Writer {
	if h.Stderr == nil {
		return io.Discard
	}
	return h.Stderr
}
