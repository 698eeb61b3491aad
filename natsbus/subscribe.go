package natsbus

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"collab/channel"
	"collab/safedir"
	"collab/tree"
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
// not, messages queue up and, past the pending limits (64Ki messages or
// 64 MiB per channel), are dropped.
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

// DefaultFileGrace is how long a Waker waits for an announced message's
// file. A reader on another NFS client can see a new file up to 60 s late.
const DefaultFileGrace = 2 * time.Minute

// maxAwaited bounds the announced messages a Waker is waiting for; more
// are not checked.
const maxAwaited = 10000

// Waker is a watcher wake source: Watch calls wake on each message
// announced on the channels' subjects and after each reconnect or dropped
// message, when polling the files is what finds what NATS missed.
type Waker struct {
	Bus *Bus

	// OnMessage, if set, is given each announced message before wake. It
	// runs on nats.go's delivery goroutine and must not block. The message
	// may arrive before its file, and the file is what counts: dedupe by
	// Key.
	OnMessage func(channel.Message)

	// Root, if set, has each announced message checked for its file after
	// FileGrace (default DefaultFileGrace); a message without one is
	// logged and counted in Stats.Missing.
	Root      tree.Root
	FileGrace time.Duration
}

type awaited struct {
	due time.Time
	ch  string
	id  string
}

// Watch subscribes to the channels and runs until ctx is done.
func (w Waker) Watch(ctx context.Context, channels []string, wake func()) error {
	b := w.Bus
	grace := or(w.FileGrace, DefaultFileGrace)
	announced := make(chan awaited, 256)
	resync, unregister := b.onResync()
	defer unregister()
	sub, err := b.Subscribe(channels, func(m channel.Message) {
		if w.OnMessage != nil {
			w.OnMessage(m)
		}
		wake()
		if w.Root != "" {
			select {
			case announced <- awaited{due: time.Now().Add(grace), ch: m.SessionID, id: m.Key()}:
			default: // the checker is behind; this one goes unchecked
			}
		}
	})
	if err != nil {
		return err
	}
	defer sub.Stop()

	var queue []awaited // in due order: every entry waits the same grace
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-b.ctx.Done():
			return errors.New("natsbus: connection closed")
		case <-resync:
			wake()
		case a := <-announced:
			if len(queue) >= maxAwaited {
				continue
			}
			queue = append(queue, a)
			if len(queue) == 1 {
				timer.Reset(time.Until(a.due))
			}
		case <-timer.C:
			now := time.Now()
			for len(queue) > 0 && !queue[0].due.After(now) {
				w.check(queue[0], grace)
				queue = queue[1:]
			}
			if len(queue) > 0 {
				timer.Reset(time.Until(queue[0].due))
			}
		}
	}
}

// check logs an announced message whose file is not there.
func (w Waker) check(a awaited, grace time.Duration) {
	d, err := safedir.Open(w.Root.Channel(a.ch))
	if err == nil {
		_, err = d.Lstat(a.id + ".json")
		d.Close()
	}
	if err == nil {
		return
	}
	if !errors.Is(err, fs.ErrNotExist) {
		w.Bus.log.Warn("cannot check an announced message's file", keyChannel, a.ch, keyMsg, a.id, keyErr, err)
		return
	}
	w.Bus.stats.missing.Add(1)
	w.Bus.log.Warn("nats announced a message whose file never appeared", keyChannel, a.ch, keyMsg, a.id, keyWaited, grace)
}
