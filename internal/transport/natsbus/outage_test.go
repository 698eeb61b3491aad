package natsbus_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

// TestOutageMidStream stops the server in the middle of a 1,000-message
// dual-write and starts it again on the same port and store, with a
// watcher-like receiver that takes messages from NATS and from the files.
// Publishes during the outage fail fast and are counted, none is replayed
// later, the Bus reconnects by itself, the stream holds each published
// message once, NATS delivers no message twice, and the files give the
// receiver every message.
func TestOutageMidStream(t *testing.T) {
	const (
		total   = 1000
		stopAt  = 300
		startAt = 450
		readyAt = 600 // from here on every publish must succeed
		timeout = 500 * time.Millisecond
	)
	s := startServer(t, true, nil)
	root := tree.Root(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pub, _ := connect(t, natsbus.Options{URL: s.URL(), PublishTimeout: timeout})
	if _, err := pub.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	recv, _ := connect(t, natsbus.Options{URL: s.URL()})

	// The receiver: one loop owns the reader; NATS announcements and
	// wake-ups reach it through channels, as in the watcher.
	var (
		mu        sync.Mutex
		announced = map[string]int{} // deliveries by NATS per id
		handled   = map[string]int{} // times each id was acted on
	)
	hints := make(chan string, total)
	wake := make(chan struct{}, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- natsbus.Waker{Bus: recv, OnMessage: func(m channel.Message) {
			mu.Lock()
			announced[m.Key()]++
			first := announced[m.Key()] == 1 && handled[m.Key()] == 0
			if first {
				handled[m.Key()]++ // act on the payload at once
			}
			mu.Unlock()
			select {
			case hints <- m.File:
			default:
			}
		}}.Watch(watchCtx, []string{"room"}, func(string, string) {
			select {
			case wake <- struct{}{}:
			default:
			}
		})
	}()
	reader, err := channel.NewReader(root, "room", channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-watchCtx.Done():
				return
			case f := <-hints:
				reader.Hint(f)
			case <-wake:
				reader.Invalidate()
			case <-tick.C:
			}
			msgs, _, err := reader.Scan()
			if err != nil {
				t.Errorf("Scan: %v", err)
				return
			}
			mu.Lock()
			for _, m := range msgs {
				if handled[m.Key()] == 0 { // dedupe by id against NATS
					handled[m.Key()]++
				}
			}
			mu.Unlock()
		}
	}()
	time.Sleep(50 * time.Millisecond) // let the Waker subscribe

	w := channel.Writer{Root: root}
	ok := map[string]bool{}      // ids whose publish succeeded
	failed := map[string]error{} // and the others
	var slowest time.Duration    // of the publishes during the outage
	var posting, publishing time.Duration
	began := time.Now()
	for i := range total {
		switch i {
		case stopAt:
			s.Stop()
			t.Logf("%v: server stopped", time.Since(began))
		case startAt:
			s.Restart()
			t.Logf("%v: server restarted", time.Since(began))
		case readyAt:
			eventually(t, "the reconnect", func() bool {
				return pub.Stats().Reconnects >= 1 && pub.JetStream()
			})
			t.Logf("%v: publisher reconnected", time.Since(began))
		}
		m := &channel.Message{SessionID: "room", From: "claude", To: "codex", Content: channel.Content{Text: fmt.Sprintf("message %d", i)}}
		start := time.Now()
		if err := w.Post(m); err != nil {
			t.Fatal(err)
		}
		posting += time.Since(start)
		start = time.Now()
		err := pub.PublishMessage(ctx, m)
		took := time.Since(start)
		publishing += took
		if i >= stopAt && i < startAt {
			slowest = max(slowest, took)
			if err == nil {
				t.Fatalf("publish %d succeeded while the server was down", i)
			}
		}
		if i >= readyAt && err != nil {
			t.Fatalf("publish %d after the reconnect: %v", i, err)
		}
		if err != nil {
			failed[m.ID] = err
		} else {
			ok[m.ID] = true
		}
	}
	t.Logf("published %d, failed %d; slowest publish while down %v", len(ok), len(failed), slowest)
	if slowest > timeout+200*time.Millisecond {
		t.Errorf("a publish while the server was down took %v", slowest)
	}
	if st := pub.Stats(); st.Failed != int64(len(failed)) || st.Published != int64(len(ok)) || st.Duplicates != 0 {
		t.Errorf("stats %+v, want %d published, %d failed", st, len(ok), len(failed))
	}

	// The stream: every acknowledged message once; no failed one was
	// replayed after the reconnect (one whose ack timed out may have been
	// stored before the server went down).
	set, err := pub.StreamIDs(ctx, "room", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for id := range ok {
		if _, in := set.IDs[id]; !in {
			t.Errorf("acknowledged %s is not in the stream", id)
		}
	}
	for id := range set.IDs {
		if err, bad := failed[id]; bad && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s failed (%v) but is in the stream", id, err)
		}
	}
	if len(set.Duplicates) > 0 {
		t.Errorf("stored twice: %v", set.Duplicates)
	}

	t.Logf("%v: all published; writing files took %v, publishing %v", time.Since(began), posting, publishing)

	// The receiver: every message acted on exactly once, none delivered
	// twice by NATS, none of the failed ones delivered at all.
	eventually(t, "the receiver to take every message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == total
	})
	t.Logf("%v: all received", time.Since(began))
	stopWatch()
	<-loopDone
	if err := <-watchDone; err != nil {
		t.Errorf("Watch: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(handled)) {
		if handled[id] != 1 {
			t.Errorf("%s handled %d times", id, handled[id])
		}
	}
	viaNATS := 0
	for id, n := range announced {
		viaNATS++
		if n != 1 {
			t.Errorf("%s delivered %d times by NATS", id, n)
		}
		if err, bad := failed[id]; bad && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s failed to publish (%v) but was delivered", id, err)
		}
	}
	t.Logf("receiver: %d via NATS, %d from the files only", viaNATS, total-viaNATS)
	if viaNATS < total-readyAt {
		t.Errorf("only %d messages came via NATS", viaNATS)
	}
}
