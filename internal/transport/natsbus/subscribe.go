package natsbus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// ErrRejected is wrapped by Decode's errors.
var ErrRejected = errors.New("natsbus: not a valid message")

// Decode returns the message a chat subject carried: the payload decoded as
// its file would be, with File set to the id (the Nats-Msg-Id header, else
// the JSON id) plus ".json", so that Key returns the id. A payload that is
// too large, is not a message, has no valid id, or names another channel
// than its subject is rejected.
func Decode(subject string, header map[string][]string, data []byte) (channel.Message, error) {
	ch, ok := strings.CutPrefix(subject, ChatPrefix)
	if !ok || !tree.ValidName(ch) {
		return channel.Message{}, fmt.Errorf("%w: subject %q is not collab.chat.CHANNEL", ErrRejected, subject)
	}
	if len(data) > channel.MaxMessageSize {
		return channel.Message{}, fmt.Errorf("%w: %d bytes", ErrRejected, len(data))
	}
	var id string
	if v := header[MsgIDHeader]; len(v) > 0 {
		id = v[0]
	}
	m, err := channel.Decode(data, "", ch)
	if err != nil {
		return channel.Message{}, fmt.Errorf("%w: %w", ErrRejected, err)
	}
	if id == "" {
		id = m.ID
	}
	if _, err := channel.ParseID(id); err != nil {
		return channel.Message{}, fmt.Errorf("%w: id %q: %w", ErrRejected, id, err)
	}
	if m.SessionID != ch {
		return channel.Message{}, fmt.Errorf("%w: session_id %q on the subject of %q", ErrRejected, m.SessionID, ch)
	}
	if m.ID == "" {
		m.ID = id
	}
	m.File = id + ".json"
	return m, nil
}

// Subscription is a set of channel subscriptions.
type Subscription struct {
	subs []*nats.Subscription
}

// Stop ends the subscription. It may be called more than once.
func (s *Subscription) Stop() {
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
}

// Subscribe calls fn with each valid message published to the channels'
// subjects from now on, one call at a time, until Stop. It returns once the
// server has the subscription, so that a caller may then read the files
// without a gap (or at once if the connection is down: the subscription is
// made on reconnect). Invalid payloads are counted and logged. fn runs on
// nats.go's delivery goroutine and should return quickly; while it does
// not, messages queue up and, past nats.go's pending limits (512Ki
// messages or 64 MiB per channel), are dropped, and Wakers wake to poll.
func (b *Bus) Subscribe(channels []string, fn func(channel.Message)) (*Subscription, error) {
	var mu sync.Mutex
	handle := func(msg *nats.Msg) {
		m, err := Decode(msg.Subject, msg.Header, msg.Data)
		if err != nil {
			b.stats.rejected.Add(1)
			if ok, n := b.asyncLog.allow(); ok {
				b.log.Warn("nats payload rejected", keySubject, msg.Subject, keyErr, err, keySuppressed, n)
			}
			return
		}
		b.stats.received.Add(1)
		mu.Lock()
		defer mu.Unlock()
		fn(m)
	}
	s := &Subscription{}
	for _, ch := range channels {
		if err := tree.CheckName("channel", ch); err != nil {
			s.Stop()
			return nil, err
		}
		sub, err := b.nc.Subscribe(ChatSubject(ch), handle)
		if err != nil {
			s.Stop()
			return nil, fmt.Errorf("natsbus: subscribe %s: %w", ch, err)
		}
		s.subs = append(s.subs, sub)
	}
	if b.nc.IsConnected() {
		if err := b.nc.FlushTimeout(b.timeout); err != nil {
			b.log.Debug("nats flush after subscribe failed", keyErr, err)
		}
	}
	return s, nil
}

// Waker is a watcher wake source: Watch calls wake on each message
// announced on the channels' subjects, and after each reconnect or dropped
// message, when polling the files is what finds what NATS missed.
type Waker struct {
	Bus *Bus

	// OnMessage, if set, is given each announced message before wake. It
	// runs on nats.go's delivery goroutine and must not block. The message
	// may arrive before its file is visible, and the file is what counts:
	// dedupe by Key, and report an announced file that never appears (see
	// channel.Reader.Hint).
	OnMessage func(channel.Message)
}

// Via names its wake-ups in a watcher's seen files.
func (Waker) Via() string { return "nats" }

// Watch subscribes to the channels and runs until ctx is done or the Bus
// is closed.
func (w Waker) Watch(ctx context.Context, channels []string, wake func(channel, file string)) error {
	b := w.Bus
	resync, unregister := b.onResync()
	defer unregister()
	sub, err := b.Subscribe(channels, func(m channel.Message) {
		if w.OnMessage != nil {
			w.OnMessage(m)
		}
		wake(m.SessionID, m.File)
	})
	if err != nil {
		return err
	}
	defer sub.Stop()
	wake("", "") // a message announced before the subscription was in place
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-b.ctx.Done():
			return errors.New("natsbus: connection closed")
		case <-resync:
			wake("", "")
		}
	}
}
