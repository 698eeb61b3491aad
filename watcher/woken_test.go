package watcher_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/watcher"
)

// waitSeenFile waits for the seen file of m and returns it.
func waitSeenFile(t *testing.T, root tree.Root, m channel.Message) delivery.SeenFile {
	t.Helper()
	var s delivery.SeenFile
	waitFor(t, "the seen file of "+m.Content.Text, func() bool {
		var err error
		s, err = delivery.ReadSeen(root, chName, agent, m.ID)
		return err == nil
	})
	return s
}

// checkSight checks the seen file's visible time: set, not before the
// message, not after the seen time.
func checkSight(t *testing.T, m channel.Message, s delivery.SeenFile) {
	t.Helper()
	if s.Visible.IsZero() || s.Visible.Before(m.Time().Truncate(time.Millisecond)) || s.Visible.After(s.Time) {
		t.Errorf("visible %v: want between the message %v and the seen time %v", s.Visible, m.Time(), s.Time)
	}
}

// TestSeenWokenByPoll: a watcher that only polls records via poll.
func TestSeenWokenByPoll(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	start(t, config(root, &fakeRunner{}))
	m := send(t, root, agent, "polled")
	s := waitSeenFile(t, root, m)
	if s.Via != delivery.ViaPoll {
		t.Errorf("via %q, want poll", s.Via)
	}
	checkSight(t, m, s)
}

// wokenBy posts messages (post posts one) until one's seen file says it
// was read because of a wake source other than the listings, which a
// watcher polling once an hour does only at its start (and when its
// source asks, once in place): it returns that seen file.
func wokenBy(t *testing.T, root tree.Root, post func(i int) channel.Message) delivery.SeenFile {
	t.Helper()
	for i := range 10 {
		m := post(i)
		s := waitSeenFile(t, root, m)
		if s.Via != delivery.ViaPoll {
			checkSight(t, m, s)
			return s
		}
	}
	t.Fatal("10 messages, each found by a listing only")
	return delivery.SeenFile{}
}

// TestSeenWokenByFsnotify: a message fsnotify names is read at once, and
// its seen file says fsnotify.
func TestSeenWokenByFsnotify(t *testing.T) {
	t.Parallel()
	root := tree.Root(t.TempDir())
	cfg := config(root, &fakeRunner{})
	cfg.Poll = time.Hour
	cfg.Wakers = []watcher.Waker{fswake.Channels{Root: root}}
	start(t, cfg)
	s := wokenBy(t, root, func(i int) channel.Message { return send(t, root, agent, fmt.Sprintf("noticed %d", i)) })
	if s.Via != delivery.ViaFsnotify {
		t.Errorf("via %q, want fsnotify", s.Via)
	}
}

// TestSeenWokenByNATS: a message announced on NATS (no fsnotify) is read
// at once, and its seen file says nats.
func TestSeenWokenByNATS(t *testing.T) {
	t.Parallel()
	s := startNATS(t)
	root := tree.Root(t.TempDir())
	quiet := slog.New(slog.DiscardHandler)
	pub := connectBus(t, s, natsbus.ConnName("alice", "host-2"), quiet)
	cfg := config(root, &fakeRunner{})
	cfg.Poll = time.Hour
	withNATS(&cfg, connectBus(t, s, natsbus.ConnName(agent, testHost), quiet))
	start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seen := wokenBy(t, root, func(i int) channel.Message {
		m := send(t, root, agent, fmt.Sprintf("announced %d", i))
		pub.PublishMessage(ctx, &m)
		return m
	})
	if seen.Via != delivery.ViaNATS {
		t.Errorf("via %q, want nats", seen.Via)
	}
}
