package live

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/gemini"
	"github.com/collabdev/collab/internal/plumbing/jsonrpc"
	"github.com/collabdev/collab/internal/plumbing/proc"
)

// Gemini CLI's live protocol is ACP (see acp.go), gemini --acp with the
// per-message adapter's model and approval mode:
//
//	gemini --acp --model MODEL --skip-trust --approval-mode MODE [ARGS…]
//
// The first turn of a process sends initialize, then session/load of the
// session to resume (Gemini CLI advertises loadSession) or session/new;
// each turn is one session/prompt of its text, answered when the turn
// ends with a stopReason; the turn's session/update notifications (agent
// message chunks, tool calls, the plan) are its events. A session/load
// the agent refuses fails the turn with modelcli.ErrSessionGone: the
// watcher then starts a new session with the whole prompt. An interrupt
// is the session/cancel notification; the prompt then ends "cancelled".
//
// The approval mode decides what runs without asking, as in a
// per-message run; what it would ask for (session/request_permission) is
// refused, as headless Gemini CLI never offers it (asking the watcher's
// operator mid-turn comes later). Gemini CLI reports no cost.

// Gemini starts Gemini CLI live sessions.
type Gemini struct {
	Adapter        *gemini.Adapter // the command line (model, approval mode, args, environment)
	InterruptGrace time.Duration   // default DefaultInterruptGrace
	KillGrace      time.Duration   // default DefaultKillGrace
}

// acpProtocolVersion is the ACP version the client speaks.
const acpProtocolVersion = 1

// argv is the command line of a process granted allow.
func (g *Gemini) argv(allow []string) []string {
	a := g.Adapter
	argv := []string{cmp.Or(a.Bin, "gemini"), "--acp", "--model", cmp.Or(a.Model, gemini.DefaultModel), "--skip-trust",
		"--approval-mode", cmp.Or(a.ApprovalMode, gemini.DefaultApprovalMode)}
	argv = append(argv, gemini.ToolArgs(allow)...)
	return append(argv, a.Args...)
}

// Start starts a process; the protocol's handshake is its first turn's.
func (g *Gemini) Start(ctx context.Context, opts Options) (Session, error) {
	dir, err := filepath.Abs(cmp.Or(opts.Dir, "."))
	if err != nil {
		return nil, fmt.Errorf("gemini live: %w", err)
	}
	argv := g.argv(opts.AllowTools)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = modelcli.Environ(gemini.Env, nil, g.Adapter.Env, opts.Env)
	cmd.Dir, cmd.SysProcAttr = opts.Dir, procAttr()
	s := &geminiSession{process: newProcess(g.KillGrace, g.InterruptGrace),
		maxText: cmp.Or(g.Adapter.MaxOutput, proc.DefaultMaxStdout), dir: dir, resume: opts.Resume,
		ready: make(chan struct{}, 1), commands: make(chan struct{}, 1),
	}
	out, err := s.start(cmd)
	if err != nil {
		return nil, fmt.Errorf("gemini live: %w", err)
	}
	s.conn = newACPConn(s.in, s.handle)
	s.inLock = &s.conn.wmu // the connection writes whole lines
	go func() {
		s.conn.serve(out, s.maxText+64<<10)
		s.err = cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

type geminiSession struct {
	process
	maxText int
	dir     string
	conn    *acpConn

	turn sync.Mutex // one turn at a time

	mu         sync.Mutex
	resume     string // the session to load at the handshake
	session    string // the ACP session, once made
	queue      []queued
	ready      chan struct{} // a note that queue has items
	running    bool          // a turn takes the agent's notifications
	asking     bool          // the running turn puts permission requests to its Ask
	cancelling bool          // session/cancel sent for the running turn
	// commands is noted when the agent lists its commands between turns
	// (available_commands_update), which after a session/load comes
	// after the replay of the session's history.
	commands chan struct{}
	ending   chan struct{} // closed when the running turn ends
}

// queued is a notification, or a request already answered, for the
// running turn.
type queued struct {
	method string
	params json.RawMessage
	at     time.Time
	id     json.RawMessage // a request the turn answers (a permission it asks about)
}

func (s *geminiSession) PID() int              { return s.pid }
func (s *geminiSession) Done() <-chan struct{} { return s.done }

func (s *geminiSession) SessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cmp.Or(s.session, s.resume)
}

// handle takes the agent's notifications and requests (on the
// connection's reader): they go to the running turn, and a permission
// request is refused (see the protocol's comment).
func (s *geminiSession) handle(kind jsonrpc.Kind, m jsonrpc.Msg) (any, *jsonrpc.Error) {
	var answer any
	switch {
	case kind == jsonrpc.Request && m.Method == "session/request_permission":
		s.mu.Lock()
		if s.running && s.asking && !s.cancelling {
			s.queue = append(s.queue, queued{method: m.Method, params: m.Params, at: time.Now(), id: m.ID})
			note(s.ready)
			s.mu.Unlock()
			return nil, rpcLater // the turn asks, and answers
		}
		s.mu.Unlock()
		answer = refusal(m.Params, s.isCancelling())
	case kind == jsonrpc.Request:
		return nil, &jsonrpc.Error{Code: -32601, Message: "method not found: " + m.Method}
	case m.Method != "session/update":
		return nil, nil
	}
	s.mu.Lock()
	if s.running {
		s.queue = append(s.queue, queued{method: m.Method, params: m.Params, at: time.Now()})
		note(s.ready)
	} else if bytes.Contains(m.Params, []byte(`"available_commands_update"`)) {
		note(s.commands) // other updates between turns (a loaded session's history) are dropped
	}
	s.mu.Unlock()
	return answer, nil
}

// note sends on c, a channel of one, unless it holds a note already.
func note(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// refusal answers a permission request: its reject-once option, else
// (or once the turn is being cancelled, as ACP wants) the outcome
// "cancelled".
func refusal(params json.RawMessage, cancelling bool) any {
	var p acpPermission
	json.Unmarshal(params, &p)
	for _, o := range p.Options {
		if o.Kind == "reject_once" && !cancelling {
			return map[string]any{"outcome": map[string]string{"outcome": "selected", "optionId": o.OptionID}}
		}
	}
	return map[string]any{"outcome": map[string]string{"outcome": "cancelled"}}
}

func (s *geminiSession) isCancelling() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelling
}

// take returns what the agent sent the running turn so far.
func (s *geminiSession) take() []queued {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}

// Turn runs one turn; see Session.
func (s *geminiSession) Turn(ctx context.Context, req modelcli.Request) (modelcli.Response, error) {
	s.turn.Lock()
	defer s.turn.Unlock()
	ctx, cancel := s.beginTurn(ctx, &req)
	defer cancel()
	start := time.Now()
	g := &geminiTurn{maxText: s.maxText}
	n := 0
	emit := func() {
		for _, e := range g.c.Resp.Events[n:] {
			if req.OnEvent != nil {
				req.OnEvent(e)
			}
		}
		n = len(g.c.Resp.Events)
	}
	var resp modelcli.Response
	sid, err := s.handshake(ctx)
	if err == nil {
		g.c.Resp.Session = sid
		g.add(modelcli.Event{Time: time.Now(), Kind: modelcli.EventStarted, Text: sid})
		emit()
		asks := newTurnAsks(ctx, req.Ask)
		resp, err = s.prompt(ctx, sid, req.Prompt, g, emit, asks)
		asks.close()
	} else {
		resp, err = g.finish(nil, err)
	}
	for _, e := range resp.Events[n:] {
		if req.OnEvent != nil {
			req.OnEvent(e)
		}
	}
	resp.Duration = time.Since(start)
	resp.Stderr = string(s.stderr.bytes())
	return resp, err
}

// handshake initializes the connection and makes or loads the session,
// the first time; it returns the session.
func (s *geminiSession) handshake(ctx context.Context) (string, error) {
	s.mu.Lock()
	sid, resume := s.session, s.resume
	s.mu.Unlock()
	if sid != "" {
		return sid, nil
	}
	var init struct {
		AgentCapabilities struct {
			LoadSession bool `json:"loadSession"`
		} `json:"agentCapabilities"`
	}
	err := s.await(ctx, "initialize", map[string]any{"protocolVersion": acpProtocolVersion,
		"clientCapabilities": map[string]any{"fs": map[string]bool{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]string{"name": "collab", "version": "1"}}, &init)
	if err != nil {
		return "", err
	}
	switch {
	case resume != "" && !init.AgentCapabilities.LoadSession:
		return "", fmt.Errorf("gemini live: resume %s: the agent cannot load sessions: %w", resume, modelcli.ErrSessionGone)
	case resume != "":
		err := s.await(ctx, "session/load", map[string]any{"sessionId": resume, "cwd": s.dir, "mcpServers": []any{}}, nil)
		var rerr *jsonrpc.Error
		if errors.As(err, &rerr) {
			return "", fmt.Errorf("gemini live: resume %s: %w: %w", resume, rerr, modelcli.ErrSessionGone)
		} else if err != nil {
			return "", err
		}
		sid = resume
		s.replayed(ctx)
	default:
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if err := s.await(ctx, "session/new", map[string]any{"cwd": s.dir, "mcpServers": []any{}}, &r); err != nil {
			return "", err
		}
		if r.SessionID == "" {
			return "", errors.New("gemini live: session/new gave no session id")
		}
		sid = r.SessionID
	}
	s.mu.Lock()
	s.session = sid
	s.mu.Unlock()
	return sid, nil
}

// replayed waits, for a second at most, for the agent to have replayed
// a loaded session's history (session/update notifications, which Gemini
// CLI sends after session/load's response): it lists its commands when it
// has (on Linux, where its writes to a pipe are synchronous). The turn
// then does not take the history for its own.
func (s *geminiSession) replayed(ctx context.Context) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-s.commands:
	case <-t.C:
	case <-ctx.Done():
	case <-s.done:
	}
}

// await calls method and waits for its result, the process's end or
// ctx's; an error of the agent is an *jsonrpc.Error.
func (s *geminiSession) await(ctx context.Context, method string, params, v any) error {
	ch, err := s.conn.call(method, params)
	if err != nil {
		return s.dead(err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			<-s.done
			return s.dead(s.err)
		}
		return result(m, v)
	case <-ctx.Done():
		go proc.EndGroup(s.pid, s.killGrace) // mid-handshake: nothing to interrupt
		return stopped(ctx)
	}
}

// dead is the error of a process gone (or whose input is).
func (s *geminiSession) dead(cause error) error {
	if cause == nil {
		cause = errors.New("exit status 0")
	}
	msg := ""
	if tail := s.stderr.bytes(); len(tail) > 0 {
		msg = ": " + modelcli.LastLine(tail)
	}
	return fmt.Errorf("%w: gemini live: %v%s", ErrDied, cause, msg)
}

// prompt sends the turn's prompt and gathers its updates until its
// response. When ctx ends, it cancels the turn and carries on until the
// response, or the process group's end.
func (s *geminiSession) prompt(ctx context.Context, sid, text string, g *geminiTurn, emit func(), asks *turnAsks) (modelcli.Response, error) {
	ending := s.begin(asks.asking())
	defer s.end(ending)
	ch, err := s.conn.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []map[string]string{{"type": "text", "text": text}}})
	if err != nil {
		return g.finish(nil, s.dead(err))
	}
	stop := ctx.Done()
	for {
		select {
		case <-s.ready:
			s.apply(g, asks)
			emit()
		case m, ok := <-ch:
			s.apply(g, asks)
			if !ok {
				<-s.done
				return g.finish(nil, s.dead(s.err))
			}
			resp, err := g.finish(&m, nil)
			if ctx.Err() != nil {
				return resp, stopped(ctx)
			}
			return resp, err
		case <-stop:
			stop = nil
			if errors.Is(context.Cause(ctx), proc.ErrKill) {
				go proc.EndGroup(s.pid, 0) // told to hurry: no interrupt, no grace
			} else {
				go interruptFor(s.intGrace, s.Interrupt)
			}
		}
	}
}

// apply hands the queued updates to the turn.
func (s *geminiSession) apply(g *geminiTurn, asks *turnAsks) {
	for _, q := range s.take() {
		if q.method == "session/request_permission" {
			var p acpPermission
			json.Unmarshal(q.params, &p)
			if q.id != nil {
				s.permit(q.id, p, asks)
			} else {
				g.refused(p, q.at)
			}
			continue
		}
		g.update(q.params, q.at)
	}
}

// permit puts a permission request to asks, and answers it with the
// option the answer picks: allow_always for an answer that allows always
// (else allow_once), allow_once, or reject_once; "cancelled" once the
// turn is being cancelled, as ACP wants.
func (s *geminiSession) permit(id json.RawMessage, p acpPermission, asks *turnAsks) {
	q := toolQuestion("Gemini CLI", toolName(p.ToolCall.ToolCallID, p.ToolCall.Kind), p.ToolCall.Title, nil)
	asks.put(q, func(ans modelcli.Answer) {
		pick := func(kinds ...string) string {
			for _, k := range kinds {
				for _, o := range p.Options {
					if o.Kind == k {
						return o.OptionID
					}
				}
			}
			return ""
		}
		var option string
		switch {
		case s.isCancelling():
		case ans.Allow && ans.Always:
			option = pick("allow_always", "allow_once")
		case ans.Allow:
			option = pick("allow_once")
		default:
			option = pick("reject_once", "reject_always")
		}
		outcome := map[string]string{"outcome": "cancelled"}
		if option != "" {
			outcome = map[string]string{"outcome": "selected", "optionId": option}
		}
		s.conn.respond(id, map[string]any{"outcome": outcome}, nil)
	})
}

// begin marks a turn running: it takes the agent's updates.
func (s *geminiSession) begin(asking bool) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running, s.queue, s.cancelling, s.asking = true, nil, false, asking
	s.ending = make(chan struct{})
	return s.ending
}

func (s *geminiSession) end(ending chan struct{}) {
	s.mu.Lock()
	left := s.queue
	close(ending)
	s.running, s.queue, s.ending, s.asking = false, nil, nil, false
	s.mu.Unlock()
	for _, q := range left {
		if q.id != nil { // a request the turn did not get to: no one asks now
			s.conn.respond(q.id, map[string]any{"outcome": map[string]string{"outcome": "cancelled"}}, nil)
		}
	}
}

// Interrupt sends session/cancel for the running turn; see Session.
func (s *geminiSession) Interrupt(ctx context.Context) error {
	s.mu.Lock()
	ending, sid := s.ending, s.session
	s.cancelling = ending != nil
	s.mu.Unlock()
	if ending == nil {
		return nil
	}
	err := s.conn.notify("session/cancel", map[string]string{"sessionId": sid})
	return s.awaitInterrupt(ctx, ending, err)
}

// Close ends the input; a process still there a grace later has its
// group ended.
func (s *geminiSession) Close() error { return s.close(nil) }
