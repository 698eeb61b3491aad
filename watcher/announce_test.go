package watcher_test

import (
	"context"
	"sync"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/presence"
)

// hungPublisher blocks every message publish until released, ignoring its
// context: the worst broker client there is.
type hungPublisher struct {
	release chan struct{}
	mu      sync.Mutex
	got     []string
}

func (p *hungPublisher) PublishMessage(_ context.Context, m *channel.Message) error {
	<-p.release
	p.mu.Lock()
	p.got = append(p.got, m.ID)
	p.mu.Unlock()
	return nil
}

func (p *hungPublisher) PublishPresence(presence.Status) error { return nil }

func (p *hungPublisher) published() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.got)
}

// TestHungPublisherDoesNotStopReplies: announcing on the fast path never
// holds up the file path; once the publisher recovers, the queued
// announcements go out.
func TestHungPublisherDoesNotStopReplies(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	pub := &hungPublisher{release: make(chan struct{})}
	released := false
	defer func() {
		if !released {
			close(pub.release)
		}
	}()
	cfg := config(root, &fakeRunner{})
	cfg.Publisher = pub
	start(t, cfg)
	var sent []channel.Message
	for _, text := range []string{"one", "two", "three"} {
		sent = append(sent, send(t, root, agent, text))
	}
	waitReplies(t, root, ids(sent...)...)
	if n := pub.published(); n != 0 {
		t.Fatalf("%d announcements went through a hung publisher", n)
	}
	close(pub.release)
	released = true
	waitFor(t, "the queued announcements", func() bool { return pub.published() == 3 })
}
