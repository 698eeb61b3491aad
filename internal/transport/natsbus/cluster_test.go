package natsbus_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// waitStatus waits up to 30 s for the stream's status to satisfy ok.
func waitStatus(t *testing.T, b *natsbus.Bus, what string, ok func(natsbus.StreamStatus) bool) natsbus.StreamStatus {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := b.StreamStatus(ctx)
		cancel()
		if err == nil && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream status: want %s, have %+v (%v)", what, st, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a condition
	}
}

// replicated is the status of a healthy R3 stream: a leader and its two
// followers current.
func replicated(st natsbus.StreamStatus) bool {
	return st.Replicas == 3 && st.Leader != "" && len(st.Current) == 2 && len(st.Behind) == 0 && st.Cluster == natstest.ClusterName
}

// TestInitStreamReplicas: on a three-node cluster, InitStream with
// Replicas 3 makes an R3 stream (a leader, two followers current); an R1
// stream with messages is updated to R3 and keeps them; no Replicas keeps
// the count; an out-of-range count is refused.
func TestInitStreamReplicas(t *testing.T) {
	c := natstest.StartCluster(t, nil)
	b, _ := connect(t, natsbus.Options{URL: c.URLs()})
	ctx := ctxT(t)
	if created, err := b.InitStream(ctx, natsbus.StreamConfig{Replicas: 3}); err != nil || !created {
		t.Fatalf("InitStream R3: created %v, %v", created, err)
	}
	waitStatus(t, b, "R3, a leader and 2 followers current", replicated)

	js, err := jetstream.New(b.Conn())
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, natsbus.StreamName); err != nil {
		t.Fatal(err)
	}
	if created, err := b.InitStream(ctx, natsbus.StreamConfig{}); err != nil || !created {
		t.Fatalf("InitStream R1: created %v, %v", created, err)
	}
	if st := waitStatus(t, b, "R1", func(st natsbus.StreamStatus) bool { return st.Leader != "" }); st.Replicas != 1 || len(st.Current)+len(st.Behind) != 0 {
		t.Fatalf("a new stream without Replicas: %+v, want R1 without followers", st)
	}
	root := tree.Root(t.TempDir())
	for i := range 5 {
		if err := b.PublishMessage(ctx, post(t, root, "ch", "alice", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if created, err := b.InitStream(ctx, natsbus.StreamConfig{Replicas: 3}); err != nil || created {
		t.Fatalf("InitStream R1 -> R3: created %v, %v", created, err)
	}
	waitStatus(t, b, "R3 after the update", replicated)
	if _, err := b.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, b, "R3 kept without Replicas", replicated)
	set, err := b.StreamIDs(ctx, "ch", time.Time{})
	if err != nil || len(set.IDs) != 5 {
		t.Fatalf("after the update the stream has %d messages (%v), want 5", len(set.IDs), err)
	}
	for _, n := range []int{-1, 6} {
		if _, err := b.InitStream(ctx, natsbus.StreamConfig{Replicas: n}); !errors.Is(err, natsbus.ErrReplicas) {
			t.Errorf("InitStream Replicas %d: %v, want ErrReplicas", n, err)
		}
	}
}

// TestInitStreamReplicasSingleServer: more than one replica on a server
// that is not in a cluster is refused, for a new stream and an existing
// one, and the existing one is left as it was.
func TestInitStreamReplicasSingleServer(t *testing.T) {
	s := startServer(t, true, nil)
	b, _ := connect(t, natsbus.Options{URL: s.URL()})
	ctx := ctxT(t)
	if _, err := b.InitStream(ctx, natsbus.StreamConfig{Replicas: 3}); !errors.Is(err, natsbus.ErrNotClustered) || !contains(err.Error(), "single server") {
		t.Fatalf("InitStream R3 on a single server: %v, want ErrNotClustered", err)
	}
	if _, err := b.StreamStatus(ctx); err == nil {
		t.Fatal("the refused InitStream made a stream")
	}
	if _, err := b.InitStream(ctx, natsbus.StreamConfig{Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.InitStream(ctx, natsbus.StreamConfig{Replicas: 3}); !errors.Is(err, natsbus.ErrNotClustered) {
		t.Fatalf("update to R3 on a single server: %v, want ErrNotClustered", err)
	}
	if st, err := b.StreamStatus(ctx); err != nil || st.Replicas != 1 || st.Cluster != "" {
		t.Fatalf("after the refused update: %+v, %v; want R1 on a single server", st, err)
	}
}

// streamFollower reads the channel's messages from the stream with direct
// gets, in order, as remote hosts do (read --follow, the mirror), retrying
// while no node answers, until ctx ends.
type streamFollower struct {
	mu   sync.Mutex
	seen map[string]int // id -> times read
	next uint64
	errs int
}

func (f *streamFollower) run(ctx context.Context, b *natsbus.Bus, ch string) {
	f.next = 1
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := natsbus.DirectBatch(rctx, b.Conn(), natsbus.DirectRequest{Seq: f.next, Subject: natsbus.ChatSubject(ch), Batch: 64},
			func(m *natsbus.StoredMsg) error {
				f.mu.Lock()
				defer f.mu.Unlock()
				f.seen[m.Header.Get(natsbus.MsgIDHeader)]++
				f.next = m.Seq + 1
				return nil
			})
		cancel()
		if err != nil {
			f.mu.Lock()
			f.errs++
			f.mu.Unlock()
		}
		time.Sleep(5 * time.Millisecond) // the follower's poll, as a read --follow between wake-ups
	}
}

func (f *streamFollower) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

// publishAcked publishes m until the stream acks it, as the bridge's
// publisher does (it keeps a message until acked): a publish that failed
// while a node went or the stream elected a leader is made again with the
// same id, which the stream stores once.
func publishAcked(t *testing.T, b *natsbus.Bus, m *channel.Message) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		js := b.JetStream()
		err := b.PublishMessage(ctx, m)
		cancel()
		if err == nil && js && b.JetStream() {
			return
		}
		if err == nil {
			t.Fatalf("publish of %s went to core NATS: the stream was there all along", m.Key())
		}
		if time.Now().After(deadline) {
			t.Fatalf("publish of %s: not acked for 60 s: %v", m.Key(), err)
		}
	}
}

// TestClusterFailover: a publisher and a reader given the three nodes'
// URLs carry on while the node they are connected to is shut down, and
// then the node that leads the R3 stream: every message is stored once
// and read once.
func TestClusterFailover(t *testing.T) {
	const perPhase = 60
	c := natstest.StartCluster(t, nil)
	pub, _ := connect(t, natsbus.Options{URL: c.URLs(), PublishTimeout: 500 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := pub.InitStream(ctx, natsbus.StreamConfig{Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, pub, "R3", replicated)
	recv, _ := connect(t, natsbus.Options{URL: c.URLs()})

	var mu sync.Mutex
	announced := map[string]int{}
	sub, err := recv.Subscribe([]string{"ch"}, func(m channel.Message) {
		mu.Lock()
		announced[m.Key()]++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	f := &streamFollower{seen: map[string]int{}}
	fctx, stopFollow := context.WithCancel(ctx)
	followDone := make(chan struct{})
	go func() { defer close(followDone); f.run(fctx, recv, "ch") }()
	defer func() { stopFollow(); <-followDone }()

	root := tree.Root(t.TempDir())
	var ids []string
	publish := func() {
		for range perPhase {
			m := post(t, root, "ch", "alice", fmt.Sprint(len(ids)))
			publishAcked(t, pub, m)
			ids = append(ids, m.Key())
		}
	}
	node := func(b *natsbus.Bus) int {
		i := c.Index(b.Conn().ConnectedServerName())
		if i < 0 {
			t.Fatalf("connected to %q, not a node of the cluster", b.Conn().ConnectedServerName())
		}
		return i
	}
	publish()
	down := node(pub)
	c.Node(down).Stop() // the publisher's node
	publish()
	if node(pub) == down {
		t.Fatal("the publisher is still connected to the node shut down")
	}
	c.Node(down).Start()
	c.WaitReady()
	waitStatus(t, pub, "R3 with the node back", replicated)
	publish()
	down = node(recv)
	c.Node(down).Stop() // the reader's node
	publish()
	c.Node(down).Start()
	c.WaitReady()
	waitStatus(t, pub, "R3 with the node back", replicated)
	leader := c.WaitStreamLeader(natsbus.StreamName)
	c.Node(leader).Stop() // the stream's leader
	publish()
	if l := c.WaitStreamLeader(natsbus.StreamName); l == leader {
		t.Fatal("the stopped node still leads the stream")
	}
	c.Node(leader).Start()
	c.WaitReady()
	publish()

	eventually30(t, "the reader to read every message", func() bool { return f.count() == len(ids) })
	f.mu.Lock()
	for _, id := range ids {
		if f.seen[id] != 1 {
			t.Errorf("message %s read %d times from the stream, want 1", id, f.seen[id])
		}
	}
	f.mu.Unlock()
	set, err := pub.StreamIDs(ctx, "ch", time.Time{})
	if err != nil || len(set.IDs) != len(ids) || len(set.Duplicates) > 0 {
		t.Fatalf("the stream holds %d ids (duplicates %v, %v), want %d", len(set.IDs), set.Duplicates, err, len(ids))
	}
	// Core NATS is at-most-once per publish: a publish made again after
	// a failed ack may be announced twice (receivers dedupe by id), and
	// one made while the reader reconnected not at all (it polls).
	mu.Lock()
	defer mu.Unlock()
	again := 0
	for _, n := range announced {
		again += n - 1
	}
	t.Logf("%d messages; reader's failed direct gets %d; announced %d by core NATS, %d again", len(ids), f.errs, len(announced), again)
}

// eventually30 is eventually with 30 s.
func eventually30(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
