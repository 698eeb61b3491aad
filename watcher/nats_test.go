package watcher_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/jobs"
	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/transport/natsbus"
	"github.com/collabdev/collab/watcher"
)

// startNATS starts a nats-server with JetStream embedded in the test, on a
// port that stays the same across restarts.
func startNATS(t testing.TB) *natstest.Server {
	t.Helper()
	return natstest.Start(t, true, nil)
}

// connectBus connects a Bus to s, closed at the end of the test.
func connectBus(t testing.TB, s *natstest.Server, name string, log *slog.Logger) *natsbus.Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := natsbus.Connect(ctx, natsbus.Options{URL: s.URL(), Name: name, ReconnectWait: 20 * time.Millisecond,
		ConnectTimeout: time.Second, PublishTimeout: 500 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatalf("nats connect: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

// withNATS wires a Bus into cfg as collab watch does: replies and presence
// published, announcements hinted to the reader, wake-ups. It returns a
// counter of the announcements received.
func withNATS(cfg *watcher.Config, bus *natsbus.Bus) *atomic.Int64 {
	var n atomic.Int64
	announce := make(chan channel.Message, 256)
	cfg.Announce = announce
	cfg.Publisher = bus
	cfg.Wakers = append(cfg.Wakers, natsbus.Waker{Bus: bus, OnMessage: func(m channel.Message) {
		n.Add(1)
		select {
		case announce <- m:
		default:
		}
	}})
	return &n
}

// TestNATSOutageMidStream: a watcher with NATS (and no fsnotify; polling
// once a second) answers a stream of messages posted and published as
// collab send does, while the nats-server is stopped and, later, started
// again on the same port and store. Every message is answered exactly
// once: none lost while NATS is down (the files deliver), none answered
// twice when it comes back (claims and the reader's seen set dedupe what
// arrives both ways), and NATS carries messages again after the restart.
func TestNATSOutageMidStream(t *testing.T) {
	t.Parallel()
	total, stopAt, startAt, readyAt := 200, 60, 100, 140
	if testing.Short() {
		total, stopAt, startAt, readyAt = 80, 20, 40, 60
	}
	s := startNATS(t)
	root := tree.Root(t.TempDir())
	quiet := slog.New(slog.DiscardHandler)
	pub := connectBus(t, s, natsbus.ConnName("alice", "host-2"), quiet)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := pub.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}

	r := &fakeRunner{}
	cfg := config(root, r)
	cfg.Poll = time.Second
	cfg.Heartbeat = time.Second
	bus := connectBus(t, s, natsbus.ConnName(agent, testHost), quiet)
	announced := withNATS(&cfg, bus)
	start(t, cfg)
	waitFor(t, "the watcher to subscribe", func() bool {
		sz, err := s.Raw().Subsz(&server.SubszOptions{Subscriptions: true, Test: natsbus.ChatSubject(chName)})
		return err == nil && sz.Total > 1 // the stream's and the watcher's
	})

	w := &channel.Writer{Root: root}
	var sent []string
	var afterRestart int64
	for i := range total {
		switch i {
		case stopAt:
			s.Stop()
		case startAt:
			s.Start()
		case readyAt:
			waitFor(t, "both sides to reconnect", func() bool {
				return pub.Stats().Reconnects >= 1 && pub.JetStream() && bus.Stats().Reconnects >= 1
			})
			afterRestart = announced.Load()
		}
		m := channel.Message{SessionID: chName, From: "alice", To: agent, Content: channel.Content{Text: fmt.Sprintf("message %d", i)}}
		if err := w.Post(&m); err != nil {
			t.Fatal(err)
		}
		pub.PublishMessage(ctx, &m) // fails while the server is down: files deliver
		sent = append(sent, m.ID)
		time.Sleep(2 * time.Millisecond)
	}

	// Wait on the runner's count first: reading the whole channel every
	// few milliseconds while the watcher works through it would slow both.
	waitForIn(t, 2*time.Minute, "a run for every message", func() bool { return len(r.Calls()) >= total })
	var msgs []channel.Message
	waitForIn(t, 2*time.Minute, "a reply to every message", func() bool {
		msgs = messages(t, root)
		return len(msgs) >= 2*total
	})
	// Settle: anything answered twice would show now.
	time.Sleep(2 * cfg.Poll)
	msgs = messages(t, root)
	lost, twice := 0, 0
	for _, id := range sent {
		switch n := len(repliesTo(msgs, id)); {
		case n == 0:
			lost++
			t.Errorf("%s: no reply", id)
		case n > 1:
			twice++
			t.Errorf("%s: %d replies", id, n)
		}
		if n := len(r.callsFor(id)); n != 1 {
			t.Errorf("%s: the CLI ran %d times, want 1", id, n)
		}
	}
	if len(msgs) != 2*total {
		t.Errorf("%d messages in the channel, want %d and one reply each", len(msgs), total)
	}
	viaNATS := announced.Load() - afterRestart
	t.Logf("%d messages: %d lost, %d answered twice; %d announcements in all, %d after the restart; watcher's bus %+v",
		total, lost, twice, announced.Load(), viaNATS, bus.Stats())
	if viaNATS == 0 {
		t.Errorf("no announcement reached the watcher after the restart")
	}
}

// TestKillOverNATS: with polls and heartbeats an hour apart, a kill
// request announced on NATS makes the watcher look at the kill file at
// once and stop the CLI; an announcement without a kill file (the file is
// the truth) stops nothing.
func TestKillOverNATS(t *testing.T) {
	t.Parallel()
	s := startNATS(t)
	root := tree.Root(t.TempDir())
	quiet := slog.New(slog.DiscardHandler)
	slow := make(chan runCall, 1)
	r := &fakeRunner{reply: func(c runCall) (modelcli.Response, error) {
		slow <- c
		<-c.Ctx.Done()
		return modelcli.Response{}, c.Ctx.Err()
	}}
	cfg := config(root, r)
	cfg.Poll = time.Hour // nothing but NATS may make the watcher look
	cfg.Heartbeat = time.Hour
	cfg.Wakers = []watcher.Waker{fswake.Channels{Root: root}} // to find the message
	bus := connectBus(t, s, natsbus.ConnName(agent, testHost), quiet)
	kills := make(chan string, 1)
	sub, err := bus.SubscribeKills(agent, func(job string) {
		select {
		case kills <- job:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	cfg.Kills = kills
	start(t, cfg)

	m := send(t, root, agent, "take your time")
	var c runCall
	select {
	case c = <-slow:
	case <-time.After(waitLong):
		t.Fatal("the CLI was not run")
	}
	waitJob(t, root, m.ID, "running", func(j jobs.Job) bool { return j.Status == jobs.Running })
	pub := connectBus(t, s, natsbus.ConnName("bob", "host-2"), quiet)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()

	// Announced, but no kill file: the CLI goes on.
	if err := pub.PublishKill(ctx, agent, natsbus.KillRequest{Job: jobFor(root, agent, m.ID), By: "mallory"}); err != nil {
		t.Fatal(err)
	}
	holds(t, 300*time.Millisecond, "the CLI runs on without a kill file", func() bool { return c.Ctx.Err() == nil })

	if err := jobs.RequestKill(root, agent, jobFor(root, agent, m.ID), "alice", nil); err != nil {
		t.Fatal(err)
	}
	if err := pub.PublishKill(ctx, agent, natsbus.KillRequest{Job: jobFor(root, agent, m.ID), By: "bob"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Ctx.Done():
	case <-time.After(waitLong):
		t.Fatal("the CLI was not stopped after the kill file and its announcement")
	}
	j := waitJob(t, root, m.ID, "killed", func(j jobs.Job) bool { return j.Done() })
	if j.Status != jobs.Killed || j.Reply != "" {
		t.Errorf("job status %q reply %q, want killed with no reply", j.Status, j.Reply)
	}
}
