package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"collab/channel"
	"collab/watcher"
)

// keepAlive is how often an idle event stream gets a comment, so a client
// that has gone is noticed by the failed write.
const keepAlive = 30 * time.Second

// apiEvents streams a channel's new messages as server-sent events: one
// event "message" per message, its id the message id and its data the
// MessageView JSON (with the verdict, without the delivery status); a
// client that reconnects with Last-Event-ID first gets what it missed. A
// channel.Reader started at the channel's end reads them, woken by
// inotify on this host and by the poll interval for other hosts' writes.
// At most MaxStreams streams are open at once; beyond that the answer is
// 503. Streams end when the server shuts down.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	ch, ok := s.channelArg(w, r)
	if !ok {
		return
	}
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		w.Header().Set("Retry-After", "30")
		refuse(w, r, http.StatusServiceUnavailable,
			fmt.Sprintf("too many live streams open (at most %d, see --max-streams); try again later", cap(s.streams)))
		return
	}
	rc := http.NewResponseController(w)
	// A stream outlives the server's read and write timeouts.
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	rd, err := channel.NewReader(s.cfg.Root, ch, channel.Cursor{}, channel.ReaderOptions{})
	if err == nil {
		err = rd.SeekEnd()
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.fail(w, r, err)
		return
	}
	// A reconnecting client says the last id it has: send what came
	// after it first (bounded), then what the reader finds, once each.
	sent := map[string]bool{}
	s.stream(r.Context(), w, rc, ch, rd, func() bool {
		for _, m := range s.missed(ch, r.Header.Get("Last-Event-ID")) {
			if !s.sendEvent(w, ch, &m) {
				return false
			}
			sent[m.Key()] = true
		}
		return true
	}, func(m *channel.Message) bool {
		return sent[m.Key()] || s.sendEvent(w, ch, m)
	})
}

// stream is the loop of an event stream over rd (which may have no
// folder yet): the headers and a first comment, then first, then what rd
// finds, each message given to send (false: the client is gone) and
// flushed. rd lists the folder at the poll interval; between ticks a
// notification from inotify on this host names the new files, read
// without a listing. An idle stream gets a comment every keepAlive. It
// ends with the request, the server or the client.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, ch string, rd *channel.Reader, first func() bool, send func(*channel.Message) bool) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, ": connected\n\n"); err != nil || rc.Flush() != nil {
		return
	}
	if first != nil && !first() {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var hints []string
	wake := make(chan struct{}, 1)
	go func() {
		_ = watcher.FSNotify{Root: s.cfg.Root}.Watch(ctx, []string{ch}, func(_, file string) {
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
	}()
	tick := time.NewTicker(s.cfg.Poll)
	defer tick.Stop()
	idle := time.NewTicker(keepAlive)
	defer idle.Stop()
	scan := rd.Scan // the first pass, and each tick: the listing gate
	for {
		msgs, _, err := scan()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("event stream: scan", "channel", ch, "err", err)
		}
		for i := range msgs {
			if !send(&msgs[i]) {
				return
			}
		}
		if rc.Flush() != nil {
			return
		}
		if len(msgs) > 0 {
			idle.Reset(keepAlive)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case <-idle.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
			scan = rd.Scan // the listing gate: no listing if nothing changed
		case <-wake: // read the new files by name, no listing
			mu.Lock()
			for _, f := range hints {
				rd.Hint(f)
			}
			hints = hints[:0]
			mu.Unlock()
			scan = rd.ScanHinted
		case <-tick.C:
			scan = rd.Scan
		}
	}
}

// sendEvent writes m as a "message" event; false when the client is gone.
func (s *Server) sendEvent(w http.ResponseWriter, ch string, m *channel.Message) bool {
	data, err := json.Marshal(s.view(ch, m))
	if err != nil {
		return true
	}
	_, err = fmt.Fprintf(w, "event: message\nid: %s\ndata: %s\n\n", m.Key(), data)
	return err == nil
}

// missed returns the messages of ch after message last (a Last-Event-ID),
// at most MaxPage of them, read with channel.Newest from the names of the
// seconds since last: a cost that follows the gap, not the channel.
// Nothing for an empty or unknown id.
func (s *Server) missed(ch, last string) []channel.Message {
	if last == "" {
		return nil
	}
	if _, err := channel.ParseID(last); err != nil {
		return nil
	}
	lm, err := channel.Lookup(s.cfg.Root, ch, last)
	if err != nil {
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
