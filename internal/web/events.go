package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/fswake"
	"github.com/collabdev/collab/internal/service"
)

// keepAlive is how often an idle event stream gets a comment, so a client
// that has gone is noticed by the failed write.
const keepAlive = 30 * time.Second

// apiEvents streams a channel's new messages as server-sent events: one
// event "message" per message, its id the message id and its data the
// MessageView JSON (with the verdict, without the delivery status); a
// client that reconnects with Last-Event-ID (a message of the channel,
// see resumeAt) first gets what it missed. A channel.Reader started at
// the channel's end reads them (Messages.Follow), woken by inotify on
// this host and by the poll interval for other hosts' writes. At most MaxStreams streams are
// open at once, MaxStreamsPerPerson of one person's; beyond that the
// answer is 503. Streams end when the server shuts down.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	ch, ok := s.channelArg(w, r)
	if !ok {
		return
	}
	rc, release, ok := s.openStream(w, r)
	if !ok {
		return
	}
	defer release()
	// A reconnecting client says the last id it has: send what came
	// after it first (bounded), then what the reader finds, once each.
	sent := map[string]bool{}
	s.stream(r.Context(), w, rc, s.followChannel(r.Context(), ch, nil, func(m *channel.Message) bool {
		return sent[m.Key()] || s.sendEvent(w, ch, m)
	}), func() bool {
		for _, m := range s.missed(ch, r.Header.Get("Last-Event-ID")) {
			if !s.sendEvent(w, ch, &m) {
				return false
			}
			sent[m.Key()] = true
		}
		return true
	})
}

// openStream takes one of the slots for an event stream, the signed-in
// person's (MaxStreamsPerPerson) and the server's (MaxStreams), and lifts
// the request's deadlines (a stream outlives the server's read and write
// timeouts); release gives the slot back. Refused, it answers 503 with
// Retry-After, naming the cap it hit, and ok is false: the one refusal of
// every stream, the API's and the page's, in the format refuse picks
// from the request.
func (s *Server) openStream(w http.ResponseWriter, r *http.Request) (rc *http.ResponseController, release func(), ok bool) {
	release, hit := s.streams.take(personOf(r))
	if hit != capNone {
		msg := fmt.Sprintf("too many live streams: the server limit (%d, --max-streams) is reached; try again later", s.cfg.MaxStreams)
		if hit == capEach {
			msg = fmt.Sprintf("too many live streams: the per-person limit (%d, --max-streams-per-person) is reached; close another tab or try again later", s.cfg.MaxStreamsPerPerson)
		}
		w.Header().Set("Retry-After", "30")
		refuse(w, r, http.StatusServiceUnavailable, msg)
		return nil, nil, false
	}
	rc = http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	return rc, release, true
}

// feed is what an event stream sends: a channel's new messages, or a
// job's new events.
type feed interface {
	// watch calls wake with the name of each file inotify sees appear in
	// the feed's folder on this host ("" for "look": the watches are in
	// place, or events were lost), until ctx ends.
	watch(ctx context.Context, wake func(file string))
	// next sends what is new: found by a listing (the reader's listing
	// gate) when list, else in the hinted files only. sent is how many
	// events it wrote; more is false when the client is gone or the feed
	// has ended (a finished job).
	next(list bool, hints []string) (sent int, more bool)
}

// stream is the loop of an event stream over f: the headers and a first
// comment, then first, then what f finds, flushed. f lists at the poll
// interval; between ticks a notification from inotify on this host names
// the new files, read without a listing. An idle stream gets a comment
// every keepAlive. It ends with the request, the server, the client or
// the feed.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, f feed, first func() bool) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if writeComment(w, "connected") != nil || rc.Flush() != nil {
		return
	}
	if first != nil && !first() {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var hints, pending []string
	wake := make(chan struct{}, 1)
	go f.watch(ctx, func(file string) {
		if file != "" {
			mu.Lock()
			if len(hints) < 256 {
				hints = append(hints, file)
			}
			mu.Unlock()
		}
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	tick := time.NewTicker(s.cfg.Poll)
	defer tick.Stop()
	idle := time.NewTicker(keepAlive)
	defer idle.Stop()
	list := true // the first pass, and each tick: the listing gate
	for {
		n, more := f.next(list, pending)
		pending = pending[:0]
		if rc.Flush() != nil || !more {
			return
		}
		if n > 0 {
			idle.Reset(keepAlive)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-idle.C:
			if writeComment(w, "keep-alive") != nil || rc.Flush() != nil {
				return
			}
			list = true // the listing gate: no listing if nothing changed
		case <-wake: // read the new files by name, no listing
			mu.Lock()
			pending = append(pending, hints...)
			hints = hints[:0]
			mu.Unlock()
			list = false
		case <-tick.C:
			list = true
		}
	}
}

// chanFeed is a channel's new messages, followed by the service
// (Messages.Follow: polling at the poll interval, woken by inotify on
// this host), each given to send (false: the client is gone).
type chanFeed struct {
	s       *Server
	ch      string
	send    func(*channel.Message) bool
	batches chan []channel.Message // what Follow found, for next
	ready   chan struct{}          // a batch is waiting
	hints   chan string            // inotify's new files, for Follow
}

// followChannel follows channel ch from from (nil: from now) until ctx
// ends, for a stream; it returns once the position is taken, so what
// lands after it is sent.
func (s *Server) followChannel(ctx context.Context, ch string, from *channel.Cursor, send func(*channel.Message) bool) *chanFeed {
	f := &chanFeed{s: s, ch: ch, send: send, batches: make(chan []channel.Message, 16),
		ready: make(chan struct{}, 1), hints: make(chan string, 256)}
	started, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		err := s.svc.Follow(ctx, service.FollowRequest{Channel: ch, From: from, Poll: s.cfg.Poll, Wake: f.hints,
			Started: func() { close(started) }}, func(msgs []channel.Message) error {
			select {
			case f.batches <- msgs:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case f.ready <- struct{}{}:
			default:
			}
			return nil
		})
		if err != nil && ctx.Err() == nil {
			s.log.Warn("event stream: follow", "channel", ch, "err", err)
		}
	}()
	select {
	case <-started:
	case <-ended:
	}
	return f
}

// watch watches the channel's folder, handing inotify's new files to the
// follow; while it cannot (the folder does not exist yet, or no inotify
// instance is left) it tries again each poll interval, the follow
// polling meanwhile. It wakes the stream when the follow found messages.
func (f *chanFeed) watch(ctx context.Context, wake func(string)) {
	go func() {
		tick := time.NewTicker(f.s.cfg.Poll)
		defer tick.Stop()
		for {
			_ = fswake.Channels{Root: f.s.cfg.Root}.Watch(ctx, []string{f.ch}, func(_, file string) {
				select {
				case f.hints <- file:
				default: // the next poll finds it
				}
			})
			select {
			case <-ctx.Done():
				return
			case <-f.s.done:
				return
			case <-tick.C:
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.ready:
			wake("")
		}
	}
}

// next sends what the follow found (its own polls and hints decide
// when, not list and hints).
func (f *chanFeed) next(bool, []string) (int, bool) {
	n := 0
	for {
		select {
		case msgs := <-f.batches:
			for i := range msgs {
				if !f.send(&msgs[i]) {
					return n, false
				}
				n++
			}
		default:
			return n, true
		}
	}
}

// sendEvent writes m as a "message" event; false when the client is gone.
func (s *Server) sendEvent(w http.ResponseWriter, ch string, m *channel.Message) bool {
	data, err := json.Marshal(s.view(ch, m))
	if err != nil {
		return true
	}
	err = writeEvent(w, "message", m.Key(), data)
	if errors.Is(err, errEventField) {
		return true // not a name the reader returns: nothing to send
	}
	return err == nil
}

// resumeAt returns the message of ch that a Last-Event-ID names, when it
// is a position this server gives: the id of a message in the channel,
// named no later than the skew window from now. Anything else (garbage,
// a message not there, one named in the future, which would hold a
// stream's start past every message to come) is ignored: ok is false,
// and the stream starts as a new one does.
func (s *Server) resumeAt(ch, last string) (m channel.Message, ok bool) {
	n, err := channel.ParseID(last)
	if err != nil || n.Time.After(time.Now().Add(channel.DefaultSkewWindow)) {
		return channel.Message{}, false
	}
	m, err = channel.Lookup(s.cfg.Root, ch, last)
	return m, err == nil
}

// missed returns the messages of ch after message last (a Last-Event-ID),
// at most MaxPage of them, read with channel.Newest from the names of the
// seconds since last: a cost that follows the gap, not the channel.
// Nothing for an id resumeAt ignores.
func (s *Server) missed(ch, last string) []channel.Message {
	lm, ok := s.resumeAt(ch, last)
	if !ok {
		return nil
	}
	at := lm.Time()
	msgs, _, _, err := channel.Newest(s.cfg.Root, ch, MaxPage, channel.After(at, time.Second), func(m *channel.Message) bool {
		t := m.Time()
		return t.After(at) || (t.Equal(at) && m.Key() != last)
	})
	if err != nil {
		return nil
	}
	return msgs
}
