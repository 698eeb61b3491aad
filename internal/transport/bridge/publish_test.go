package bridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/natstest"
	"github.com/collabdev/collab/internal/transport/natsbus"
)

func bus(t *testing.T, url string) *natsbus.Bus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := natsbus.Connect(ctx, natsbus.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if _, err := b.InitStream(ctx, natsbus.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	return b
}

// flaky fails every publish after the first ok ones.
type flaky struct {
	Stream
	ok atomic.Int64
}

func (f *flaky) PublishMessage(ctx context.Context, m *channel.Message) error {
	if f.ok.Add(-1) < 0 {
		return errors.New("flaky: publish failed")
	}
	return f.Stream.PublishMessage(ctx, m)
}

// foreign writes a message file as a script would: no publish.
func foreign(t *testing.T, root tree.Root, ch, text string, at time.Time) string {
	t.Helper()
	id := channel.NewID("script", at, fmt.Sprintf("%04x", seq.Add(1)&0xffff))
	if err := os.MkdirAll(root.Channel(ch), 0o755); err != nil {
		t.Fatal(err)
	}
	data := fmt.Sprintf(`{"id":%q,"timestamp":%q,"session_id":%q,"from":"script","to":"all","type":"chat","content":{"text":%q}}`,
		id, at.UTC().Format(channel.TimeFormat), ch, text)
	if err := os.WriteFile(root.Channel(ch)+"/"+id+".json", []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return id
}

// parity waits until the stream holds every file of ch, failing the test
// if it does not within a generous bound.
func parity(t *testing.T, b *natsbus.Bus, root tree.Root, ch string) {
	t.Helper()
	var missing, extra []string
	for range 200 {
		files, err := natsbus.FileIDs(root, ch, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		set, err := b.StreamIDs(context.Background(), ch, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if missing, extra = natsbus.Parity(files, set.IDs); len(missing) == 0 && len(extra) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("channel %s: missing in the stream %v, in the files %v", ch, missing, extra)
}

func runPublisher(t *testing.T, p *Publisher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// TestPublisher: files written by a foreign writer are published, with a
// backfill on the first start; a publisher whose publishes fail and that
// stops then, and channels that appear while none runs, lose nothing
// after a restart.
func TestPublisher(t *testing.T) {
	root := tree.Root(t.TempDir())
	srv := natstest.Start(t, true, nil)
	b := bus(t, srv.URL())
	now := time.Now()
	old := foreign(t, root, "dev", "two days old: before the backfill", now.Add(-48*time.Hour))
	for i := range 3 {
		foreign(t, root, "dev", fmt.Sprintf("recent %d", i), now.Add(-time.Duration(i+1)*time.Minute))
	}
	state := StatePath(root, "host.example")
	newP := func(s Stream) *Publisher {
		return &Publisher{Root: root, Stream: s, StateFile: state, Poll: 20 * time.Millisecond}
	}

	stop := runPublisher(t, newP(b))
	deadline := time.Now().Add(10 * time.Second)
	for {
		set, err := b.StreamIDs(context.Background(), "dev", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(set.IDs) == 3 {
			if _, ok := set.IDs[old]; ok {
				t.Fatalf("the message older than the backfill was published")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream holds %d of the 3 recent messages", len(set.IDs))
		}
		time.Sleep(20 * time.Millisecond)
	}
	foreign(t, root, "dev", "while running", time.Now())
	foreign(t, root, "ops", "a channel that appears later", time.Now())
	if err := os.Remove(root.Channel("dev") + "/" + old + ".json"); err != nil { // out of parity's way
		t.Fatal(err)
	}
	parity(t, b, root, "dev")
	parity(t, b, root, "ops")
	stop()
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("state file: %v", err)
	}

	// A publisher whose stream fails after 2 publishes, stopped then: its
	// state must not pass what was not acked.
	for i := range 6 {
		foreign(t, root, "dev", fmt.Sprintf("burst %d", i), time.Now())
	}
	f := &flaky{Stream: b}
	f.ok.Store(2)
	stop = runPublisher(t, newP(f))
	for f.ok.Load() >= 0 {
		time.Sleep(10 * time.Millisecond)
	}
	stop()

	// While none runs: more messages, and a new channel.
	foreign(t, root, "dev", "while down", time.Now())
	foreign(t, root, "later", "new channel while down", time.Now())
	stop = runPublisher(t, newP(b))
	defer stop()
	for _, ch := range []string{"dev", "ops", "later"} {
		parity(t, b, root, ch)
	}
}

// TestPublisherHints: with a poll that never comes, a file made on this
// host is published on fsnotify's word, also one written in place whose
// creation showed an empty file.
func TestPublisherHints(t *testing.T) {
	root := tree.Root(t.TempDir())
	srv := natstest.Start(t, true, nil)
	b := bus(t, srv.URL())
	foreign(t, root, "dev", "before", time.Now())
	stop := runPublisher(t, &Publisher{Root: root, Stream: b, StateFile: StatePath(root, "h"), Poll: time.Hour})
	defer stop()
	parity(t, b, root, "dev")
	foreign(t, root, "dev", "after", time.Now())
	parity(t, b, root, "dev")

	id := channel.NewID("script", time.Now(), "beef")
	path := root.Channel("dev") + "/" + id + ".json"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	time.Sleep(200 * time.Millisecond) // the creation is looked at, empty
	data := fmt.Sprintf(`{"id":%q,"timestamp":%q,"session_id":"dev","from":"script","to":"all","type":"chat","content":{"text":"in place"}}`,
		id, time.Now().UTC().Format(channel.TimeFormat))
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	parity(t, b, root, "dev")
}
