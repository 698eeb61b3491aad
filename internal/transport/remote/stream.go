package remote

import (
	"context"
	"errors"
	"time"

	"github.com/collabdev/collab/internal/transport/natsbus"
)

// Stream reading tuning.
const (
	// streamBatch is the most messages one direct get asks for.
	streamBatch = 256
	// hintRetry is how soon a read that a hint woke and that found
	// nothing is tried again, doubling hintRetries times: a subscriber
	// may see a message before the stream has stored it.
	hintRetry   = 5 * time.Millisecond
	hintRetries = 4
)

// errPastEnd ends a read at its last sequence.
var errPastEnd = errors.New("past the end of the read")

// streamReader reads the messages of some channels from the stream CHAT
// with JetStream direct gets (natsbus.DirectBatch, by sequence, in
// batches). It holds nothing on the server: no consumer, no name, so a
// remote agent's user needs no consumer API at all (deploy/nats/
// accounts.conf grants it $JS.API.DIRECT.GET.CHAT and
// $JS.API.STREAM.INFO.CHAT, nothing else of JetStream). Reading is
// polling, which is the truth; a core NATS subscription to the channels'
// subjects is the hint that makes the next read sooner ([streamReader.wait]).
// A reader is used by one goroutine.
type streamReader struct {
	stream  *natsbus.Reader
	timeout time.Duration // per request
	unhint  func()        // ends the hints
	wake    chan struct{}
	retry   int // quick reads left after a hint
}

// newStreamReader returns a reader woken by new messages of channels.
func newStreamReader(stream *natsbus.Reader, channels []string, timeout time.Duration) (*streamReader, error) {
	r := &streamReader{stream: stream, timeout: timeout, wake: make(chan struct{}, 1)}
	unhint, err := stream.Hint(channels, func() {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, err
	}
	r.unhint = unhint
	return r, nil
}

// close ends the hints.
func (r *streamReader) close() { r.unhint() }

// info returns the stream's info: natsbus.ErrNoDirect when it does not
// allow direct gets.
func (r *streamReader) info(ctx context.Context) (*natsbus.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return r.stream.Info(ctx)
}

// read calls fn with each message of ch in the stream from sequence from
// on (0: from those stored at or after start) through upTo (0: to the
// end), in stream order, batch after batch. It returns the sequence of
// the last message given to fn (0 none) and the first failure: fn's
// error, or the stream's.
func (r *streamReader) read(ctx context.Context, ch string, from uint64, start time.Time, upTo uint64, fn func(*natsbus.StoredMsg) error) (last uint64, err error) {
	req := natsbus.DirectRequest{Seq: from, Subject: natsbus.ChatSubject(ch), Batch: streamBatch}
	if from == 0 {
		req.StartTime = start
	}
	for {
		if upTo > 0 && req.Seq > 0 {
			if req.Seq > upTo {
				return last, nil
			}
			req.Batch = int(min(upTo-req.Seq+1, streamBatch))
		}
		bctx, cancel := context.WithTimeout(ctx, r.timeout)
		pending, err := r.stream.Batch(bctx, req, func(m *natsbus.StoredMsg) error {
			if upTo > 0 && m.Seq > upTo {
				return errPastEnd
			}
			last = m.Seq
			return fn(m)
		})
		cancel()
		switch {
		case errors.Is(err, errPastEnd):
			return last, nil
		case err != nil:
			return last, err
		case pending == 0 || last < req.Seq:
			return last, nil
		}
		req.Seq, req.StartTime = last+1, time.Time{}
	}
}

// wait blocks until the next read is due: after poll, at once on a hint
// (a message published on one of the channels), and soon again after a
// read that a hint woke and that found nothing (found false), since a
// subscriber may see a message before the stream has stored it.
func (r *streamReader) wait(ctx context.Context, poll time.Duration, found bool) {
	if found {
		r.retry = 0
	}
	d := poll
	if r.retry > 0 {
		d = min(hintRetry<<(hintRetries-r.retry), poll)
		r.retry--
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-r.wake:
		r.retry = hintRetries
	}
}
