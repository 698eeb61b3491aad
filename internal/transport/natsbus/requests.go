package natsbus

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Conn is a connection to NATS: the one a [Bus] holds ([Bus.Conn]), or
// one a test dials. An alias of nats.go's, so that a package handed one
// (the bridge, the remote client) never imports nats.go.
type Conn = nats.Conn

// StreamInfo is the stream's info, as [Reader.Info] returns it.
type StreamInfo = jetstream.StreamInfo

// Errors of NATS that callers act on.
var (
	// ErrMaxPayload: a message larger than the server's max_payload.
	ErrMaxPayload = nats.ErrMaxPayload
	// ErrNoResponders: a request nobody is subscribed to answer.
	ErrNoResponders = nats.ErrNoResponders
	// ErrConnectionClosed: the connection was closed.
	ErrConnectionClosed = nats.ErrConnectionClosed
)

// Request sends data on subject over nc and returns the reply's payload;
// ctx bounds the wait. Nobody listening is [ErrNoResponders].
func Request(ctx context.Context, nc *Conn, subject string, data []byte) ([]byte, error) {
	msg, err := nc.RequestWithContext(ctx, subject, data)
	if err != nil {
		return nil, err
	}
	return msg.Data, nil
}

// Queue is where [ServeQueue] takes requests: Subject (wildcards
// allowed) in queue group Group, at most Workers at once (at least 1).
// Requests beyond Workers wait in the subscription's pending buffer
// (nats.go's limits; past them the client times out).
type Queue struct {
	Subject, Group string
	Workers        int
}

// ServeQueue answers the requests of q with handle(subject, data), until
// ctx is done; then it stops taking requests (a drain; a request still
// buffered is dropped, and its client's timeout retries it), waits for
// those under way, and returns nil. A request without a reply subject is
// handled and not answered; a reply that cannot be sent is told to
// failed (nil: ignored).
func ServeQueue(ctx context.Context, nc *Conn, q Queue, handle func(subject string, data []byte) []byte, failed func(subject string, err error)) error {
	sem := make(chan struct{}, max(q.Workers, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	stopped := false // set once ctx is done: a request handed over later is dropped
	sub, err := nc.QueueSubscribe(q.Subject, q.Group, func(msg *nats.Msg) {
		sem <- struct{}{} // blocks the subscription: bounded work
		mu.Lock()
		if stopped {
			mu.Unlock()
			<-sem
			return // its client times out and tries again (an outbox keeps it)
		}
		wg.Add(1)
		mu.Unlock()
		go func() {
			defer func() { <-sem; wg.Done() }()
			reply := handle(msg.Subject, msg.Data)
			if msg.Reply == "" {
				return
			}
			if err := msg.Respond(reply); err != nil && failed != nil {
				failed(msg.Subject, err)
			}
		}()
	})
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", q.Subject, err)
	}
	<-ctx.Done()
	// Drain returns at once, and nats.go may still hand buffered requests
	// to the callback: once stopped is set they are dropped, so no
	// handler starts after wg.Wait has begun.
	err = sub.Drain()
	mu.Lock()
	stopped = true
	mu.Unlock()
	wg.Wait()
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("drain: %w", err)
	}
	return nil
}

// Reader reads the stream CHAT with direct gets over one connection
// ([DirectInfo], [DirectBatch]), and hears of new messages with core
// NATS subscriptions ([Reader.Hint]): what a remote agent's user may do.
type Reader struct {
	nc *nats.Conn
	js jetstream.JetStream
}

// NewReader returns a Reader over nc.
func NewReader(nc *Conn) (*Reader, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &Reader{nc: nc, js: js}, nil
}

// Info is [DirectInfo].
func (r *Reader) Info(ctx context.Context) (*StreamInfo, error) {
	return DirectInfo(ctx, r.js)
}

// Batch is [DirectBatch].
func (r *Reader) Batch(ctx context.Context, req DirectRequest, fn func(*StoredMsg) error) (pending uint64, err error) {
	return DirectBatch(ctx, r.nc, req, fn)
}

// Hint calls fn for each message published on one of channels (a hint:
// the read that follows is the truth), until stop.
func (r *Reader) Hint(channels []string, fn func()) (stop func(), err error) {
	var subs []*nats.Subscription
	stop = func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}
	for _, ch := range channels {
		sub, err := r.nc.Subscribe(ChatSubject(ch), func(*nats.Msg) { fn() })
		if err != nil {
			stop()
			return nil, fmt.Errorf("subscribe %s: %w", ch, err)
		}
		subs = append(subs, sub)
	}
	return stop, nil
}
