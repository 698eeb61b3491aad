package watcher

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
)

// announcer hands the messages the watcher posted to the Publisher from a
// goroutine of its own, so that a broker that hangs (a stopped server
// keeps its connections open) never delays the loop: the file is already
// in place, and the announcement is only a hint. A bounded queue absorbs
// bursts; when it is full the announcement is dropped and counted, and the
// message still arrives by polling.
type announcer struct {
	pub     Publisher
	log     *slog.Logger
	timeout time.Duration
	q       chan channel.Message
	wg      sync.WaitGroup

	mu      sync.Mutex
	dropped int
}

const announceQueue = 256

func newAnnouncer(pub Publisher, log *slog.Logger, timeout time.Duration) *announcer {
	a := &announcer{pub: pub, log: log, timeout: timeout, q: make(chan channel.Message, announceQueue)}
	a.wg.Add(1)
	go a.run()
	return a
}

func (a *announcer) run() {
	defer a.wg.Done()
	for m := range a.q {
		ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
		a.pub.PublishMessage(ctx, &m) // logged and counted by the publisher
		cancel()
	}
}

// announce queues m, or drops it when the queue is full.
func (a *announcer) announce(m *channel.Message) {
	select {
	case a.q <- *m:
	default:
		a.mu.Lock()
		a.dropped++
		n := a.dropped
		a.mu.Unlock()
		if n == 1 || n%100 == 0 {
			a.log.Warn("announcement queue full; the message is announced by its file only", keyMsg, m.ID, keyDropped, n)
		}
	}
}

// close lets the queue drain for at most d, then gives up on the rest.
func (a *announcer) close(d time.Duration) {
	close(a.q)
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		a.log.Warn("announcements still pending at exit; their files deliver them")
	}
}
