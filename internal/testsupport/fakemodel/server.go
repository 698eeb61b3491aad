package fakemodel

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a fake model endpoint on 127.0.0.1. It is safe for concurrent
// use: several CLIs may talk to one Server while a test changes its script.
type Server struct {
	hs   *httptest.Server
	done chan struct{} // closed by Close: stops delays and hung streams
	once sync.Once

	mu      sync.Mutex
	queue   []Reply
	script  func(Request) Reply
	reqs    []Request
	arrived chan struct{} // closed and replaced on every request
	seq     int
}

// Start starts a Server. With a non-nil tb it is closed when the test
// ends; without one the caller must Close it.
func Start(tb testing.TB) *Server {
	s := &Server{done: make(chan struct{}), arrived: make(chan struct{})}
	s.hs = httptest.NewServer(http.HandlerFunc(s.serve))
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// URL returns the server's base URL, "http://127.0.0.1:PORT", with no
// path: Claude Code and Gemini CLI add theirs (/v1/messages,
// /v1beta/models/…); Codex's provider base_url is URL()+"/v1".
func (s *Server) URL() string { return s.hs.URL }

// Close ends hung and delayed replies, then shuts the server down.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.hs.CloseClientConnections()
		s.hs.Close()
	})
}

// Next queues replies for the next model calls, one each, in order. A
// queued reply comes before the script.
func (s *Server) Next(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Script sets the function that answers model calls when nothing is
// queued; nil restores [Echo]. It is called from the server's handler
// goroutines, concurrently when calls overlap.
func (s *Server) Script(f func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = f
}

// Always answers every model call with r (when nothing is queued).
func (s *Server) Always(r Reply) { s.Script(func(Request) Reply { return r }) }

// Requests returns the model calls (turns) received so far, in order.
// The requests share their slices and maps with the server: read only.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.reqs {
		if r.Turn {
			out = append(out, r)
		}
	}
	return out
}

// AllRequests returns every request received so far, turns and others
// (connectivity probes, token counts, unknown paths), in order.
func (s *Server) AllRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// WaitRequests waits until at least n model calls have arrived (the
// reply may still be under way) or ctx ends, and returns them.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]Request, error) {
	for {
		s.mu.Lock()
		arrived := s.arrived
		s.mu.Unlock()
		if reqs := s.Requests(); len(reqs) >= n {
			return reqs, nil
		}
		select {
		case <-arrived:
		case <-ctx.Done():
			return s.Requests(), fmt.Errorf("fakemodel: %d of %d requests: %w", len(s.Requests()), n, ctx.Err())
		}
	}
}

// WaitQuiet waits until the server is done with every model call
// (answered, cut short, or its client gone) and no new one has come for
// quiet (the CLI's turn is over, as far as the model can tell), or ctx
// ends.
func (s *Server) WaitQuiet(ctx context.Context, quiet time.Duration) error {
	t := time.NewTimer(quiet)
	defer t.Stop()
	last := -1
	for {
		s.mu.Lock()
		arrived := s.arrived
		s.mu.Unlock()
		reqs := s.Requests()
		done := true
		for _, r := range reqs {
			done = done && !r.Over.IsZero()
		}
		if !done || len(reqs) != last {
			last = len(reqs)
			t.Reset(quiet)
		}
		select {
		case <-t.C:
			if done {
				return nil
			}
			t.Reset(quiet)
		case <-arrived:
		case <-time.After(quiet / 5): // an answer ending is not an arrival
		case <-ctx.Done():
			return fmt.Errorf("fakemodel: the model calls did not settle: %w", ctx.Err())
		}
	}
}

// record stores r and returns it with its sequence number.
func (s *Server) record(r Request) Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	r.Seq = s.seq
	s.reqs = append(s.reqs, r)
	close(s.arrived)
	s.arrived = make(chan struct{})
	return r
}

// over notes that the server is done with request seq.
func (s *Server) over(seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := seq - 1; i >= 0 && i < len(s.reqs) && s.reqs[i].Seq == seq {
		s.reqs[i].Over = time.Now()
	}
}

// ended notes that the answer to request seq has been written whole.
func (s *Server) ended(seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := seq - 1; i >= 0 && i < len(s.reqs) && s.reqs[i].Seq == seq {
		s.reqs[i].Ended = time.Now()
	}
}

// reply picks the answer to a model call.
func (s *Server) reply(r Request) Reply {
	s.mu.Lock()
	var rep Reply
	if len(s.queue) > 0 {
		rep = s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
	} else {
		script := s.script
		s.mu.Unlock()
		if script == nil {
			script = Echo
		}
		rep = script(r)
	}
	rep = rep.resolve(r)
	if rep.then != nil {
		// The follow-up of a tool search answers the next call.
		s.mu.Lock()
		s.queue = append([]Reply{*rep.then}, s.queue...)
		s.mu.Unlock()
	}
	return rep
}

func (s *Server) serve(w http.ResponseWriter, hr *http.Request) {
	arrived := time.Now()
	body, err := readBody(hr)
	req := Request{
		Arrived: arrived,
		Method:  hr.Method,
		Path:    hr.URL.Path,
		Query:   redactQuery(hr.URL.RawQuery),
		Header:  redactHeader(hr.Header),
		Body:    body,
	}
	if err != nil {
		s.record(req)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	path := hr.URL.Path
	switch {
	case hr.Method == http.MethodHead || (hr.Method == http.MethodGet && path == "/"):
		// Claude Code probes the base URL with HEAD / before its first call.
		s.record(req)
		w.WriteHeader(http.StatusOK)

	case hr.Method == http.MethodPost && path == "/v1/messages":
		req.API = Anthropic
		s.turn(w, hr, req, decodeAnthropic(&req), anthropicWriter{})
	case hr.Method == http.MethodPost && path == "/v1/messages/count_tokens":
		req.API = Anthropic
		_ = decodeAnthropic(&req)
		s.record(req)
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": tokens(len(body))})

	case hr.Method == http.MethodPost && path == "/v1/responses":
		req.API = OpenAI
		s.turn(w, hr, req, decodeOpenAI(&req), openaiWriter{})
	case hr.Method == http.MethodGet && path == "/v1/models":
		req.API = OpenAI
		s.record(req)
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{}, "models": []any{}})

	case strings.HasPrefix(path, "/v1beta/models/") || (strings.HasPrefix(path, "/v1/models/") && strings.Contains(path, ":")):
		req.API = Gemini
		model, method, _ := strings.Cut(path[strings.Index(path, "/models/")+len("/models/"):], ":")
		switch method {
		case "streamGenerateContent":
			err := decodeGemini(&req, model)
			req.Stream = true
			s.turn(w, hr, req, err, geminiWriter{stream: true})
		case "generateContent":
			s.turn(w, hr, req, decodeGemini(&req, model), geminiWriter{})
		case "countTokens":
			_ = decodeGemini(&req, model)
			s.record(req)
			writeJSON(w, http.StatusOK, map[string]any{"totalTokens": tokens(len(body))})
		default:
			s.record(req)
			geminiWriter{}.error(w, http.StatusNotFound, "fakemodel: no method "+method)
		}

	default:
		s.record(req)
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"message": "fakemodel: no route for " + hr.Method + " " + path, "type": "not_found_error"}})
	}
}

// writer speaks one API's response format.
type writer interface {
	error(w http.ResponseWriter, status int, message string)
	streaming(r Request) bool            // the request asked for a stream
	events(r Request, rep Reply) []event // the reply as a stream
	json(r Request, rep Reply) any       // the reply as one JSON body
}

// event is one server-sent event; name "" leaves out the event: line.
type event struct {
	name      string
	data      any
	hangAfter bool // a Hang reply stops the stream after this event
}

// turn answers one model call.
func (s *Server) turn(w http.ResponseWriter, hr *http.Request, req Request, decodeErr error, wr writer) {
	req.Turn = decodeErr == nil
	req = s.record(req)
	defer s.over(req.Seq)
	if decodeErr != nil {
		wr.error(w, http.StatusBadRequest, "fakemodel: cannot decode request: "+decodeErr.Error())
		return
	}
	rep := s.reply(req)
	if !s.sleep(hr.Context(), rep.Delay) {
		return
	}
	if rep.Status >= 400 {
		wr.error(w, rep.Status, rep.Message)
		s.ended(req.Seq)
		return
	}
	if !wr.streaming(req) {
		if rep.Hang {
			s.sleep(hr.Context(), time.Duration(1<<63-1))
			return
		}
		writeJSON(w, http.StatusOK, wr.json(req, rep))
		s.ended(req.Seq)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for i, ev := range wr.events(req, rep) {
		if i > 0 && !s.sleep(hr.Context(), rep.Pace) {
			return
		}
		data, err := json.Marshal(ev.data)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if ev.name != "" {
			fmt.Fprintf(&b, "event: %s\n", ev.name)
		}
		fmt.Fprintf(&b, "data: %s\n\n", data)
		if _, err := w.Write(b.Bytes()); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		if rep.Hang && ev.hangAfter {
			select {
			case <-hr.Context().Done():
			case <-s.done:
			}
			return
		}
	}
	s.ended(req.Seq)
}

// sleep waits d; false when the client went away or the server closed.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

func readBody(hr *http.Request) ([]byte, error) {
	var rd io.Reader = hr.Body
	switch hr.Header.Get("Content-Encoding") {
	case "gzip":
		zr, err := gzip.NewReader(hr.Body)
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		rd = zr
	case "zstd", "br", "deflate":
		return nil, fmt.Errorf("fakemodel: unsupported content encoding %q", hr.Header.Get("Content-Encoding"))
	}
	b, err := io.ReadAll(io.LimitReader(rd, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return b, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"fakemodel: marshal"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
