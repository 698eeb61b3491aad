package join

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The hooks of Claude Code and Gemini CLI (a command the CLI runs at its
// events, collab join-hook) reach the delivery loop through a Unix socket
// in the session's private folder (Config.Dir, 0700; the socket 0600),
// whose path the CLI's environment carries (SocketEnv) to its hooks. One
// JSON line each way, then the hook's acknowledgement:
//
//	hook → {"cli": "claude", "event": "Stop", "wait": true,
//	        "session_id": "…", "transcript_path": "…"}
//	join → {"text": BATCH, "summary": LINE, "count": N}   or {} for nothing
//	hook → {"ack": true}                                   once it wrote the batch out
//
// A hook that waits (wait true: Claude Code's asyncRewake hooks) gets its
// answer when messages come, or {} when a newer waiting hook replaces it
// or the session ends. A batch is offered once acknowledged; a hook that
// goes away before that leaves it queued.

// SocketEnv names the socket's path in the CLI's environment.
const SocketEnv = "COLLAB_JOIN_SOCK"

// hookRequest is what a hook asks.
type hookRequest struct {
	CLI            string `json:"cli"`
	Event          string `json:"event"`
	Wait           bool   `json:"wait,omitempty"`
	SessionID      string `json:"session_id,omitempty"`
	TranscriptPath string `json:"transcript_path,omitempty"`
}

// hookReply is the loop's answer.
type hookReply struct {
	Text    string `json:"text,omitempty"`
	Summary string `json:"summary,omitempty"`
	Count   int    `json:"count,omitempty"`
}

type hookAck struct {
	Ack bool `json:"ack"`
}

// maxHookLine bounds a line on the socket.
const maxHookLine = 64 << 10

// ackWait bounds the wait for a hook's acknowledgement.
const ackWait = 10 * time.Second

// listen opens the session's socket.
func (s *Session) listen() (net.Listener, string, error) {
	path := filepath.Join(s.cfg.Dir, "sock")
	os.Remove(path) // a socket left by a session of this folder that died
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, "", fmt.Errorf("join: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, "", fmt.Errorf("join: %w", err)
	}
	return l, path, nil
}

// serveHooks answers the hooks until l is closed.
func (s *Session) serveHooks(ctx context.Context, l net.Listener, model []string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go s.serveHook(ctx, c, model)
	}
}

// serveHook answers one hook.
func (s *Session) serveHook(ctx context.Context, c net.Conn, model []string) {
	defer c.Close()
	r := bufio.NewReaderSize(io.LimitReader(c, 2*maxHookLine), maxHookLine)
	var req hookRequest
	line, err := r.ReadSlice('\n')
	if err != nil || json.Unmarshal(line, &req) != nil {
		return
	}
	s.noteTranscript(req.TranscriptPath, model)
	var b Batch
	if req.Wait {
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		s.supersede(cancel)
		// The hook going away (the CLI ended it) ends the wait too.
		gone := make(chan []byte, 1)
		go func() {
			l, err := r.ReadSlice('\n')
			if err != nil {
				cancel()
			}
			gone <- l
		}()
		b = s.take(wctx, true)
		if len(b) == 0 {
			json.NewEncoder(c).Encode(hookReply{})
			return
		}
		s.hand(c, b, gone)
		return
	}
	b = s.take(ctx, false)
	if len(b) == 0 {
		json.NewEncoder(c).Encode(hookReply{})
		return
	}
	acked := make(chan []byte, 1)
	go func() {
		l, _ := r.ReadSlice('\n')
		acked <- l
	}()
	s.hand(c, b, acked)
}

// hand writes b to the hook and records it offered once the hook
// acknowledges it (the line on acked), else queues it again.
func (s *Session) hand(c net.Conn, b Batch, acked <-chan []byte) {
	reply := hookReply{Text: b.Text(s.cfg.Agent), Summary: b.Summary(), Count: len(b)}
	if err := json.NewEncoder(c).Encode(reply); err != nil {
		s.putBack(b)
		return
	}
	var ack hookAck
	select {
	case l := <-acked:
		if json.Unmarshal(l, &ack) == nil && ack.Ack {
			s.delivered(b)
			return
		}
	case <-time.After(ackWait):
	}
	s.putBack(b)
}

// errNoSession is a hook's error when no joined session is there to ask.
var errNoSession = errors.New("join-hook: no joined session")

// ask is the hook's side: it sends req to the socket at path and returns
// the reply, and a function that acknowledges it.
func ask(ctx context.Context, path string, req hookRequest) (hookReply, func(), error) {
	if path == "" {
		return hookReply{}, nil, errNoSession
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return hookReply{}, nil, fmt.Errorf("%w: %v", errNoSession, err)
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	if err := json.NewEncoder(c).Encode(req); err != nil {
		stop()
		c.Close()
		return hookReply{}, nil, err
	}
	var reply hookReply
	r := bufio.NewReaderSize(io.LimitReader(c, 16<<20), 64<<10)
	err = json.NewDecoder(r).Decode(&reply)
	if err != nil || reply.Count == 0 {
		stop()
		c.Close()
		return hookReply{}, nil, err
	}
	return reply, func() {
		json.NewEncoder(c).Encode(hookAck{Ack: true})
		stop()
		c.Close()
	}, nil
}
