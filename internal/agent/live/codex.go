package live

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/plumbing/jsonrpc"
	"github.com/collabdev/collab/internal/plumbing/proc"
)

// Codex's live sessions (codex app-server, see codex_rpc.go for the
// protocol): the process starts at once; its first turn does the
// handshake (initialize, initialized) and opens the conversation's thread
// (thread/start, or thread/resume of Options.Resume, a thread id) with
// approval policy "never" and the adapter's sandbox, so that it runs as
// codex exec does. Each turn is a turn/start whose input is the prompt;
// the notifications of the turn become the codex exec --json lines the
// per-message adapter reads (codex.Parser), so a turn has the same events
// and response as a run of it, Session the thread id. An interrupt is
// turn/interrupt; the turn then completes with status "interrupted".
//
// A turn whose request has an Ask runs with approval policy "on-request"
// (the model may ask to run a command outside the sandbox, or to change
// files it may not): the server's approval requests
// (item/commandExecution/requestApproval, item/fileChange/requestApproval)
// are put to Ask (ask.go) and answered accept, acceptForSession (an
// answer that allows always) or decline. Without Ask the turn runs with
// "never", as codex exec does, and what asks anyway is declined at once.
// Other requests (elicitations, questions for the user) are declined at
// once, with a progress event saying so.
//
// Usage is the difference of the thread's token count
// (thread/tokenUsage/updated) over the turn. A process that resumes a
// thread starts from the count the Codex starter last saw for it; for a
// thread it has not seen (a restarted watcher) the first turn counts the
// thread's tokens so far, as a run of the adapter on such a thread does.

// Codex starts Codex live sessions. It must not be copied after first
// use.
type Codex struct {
	Adapter        *codex.Adapter // the command line (MCP servers, Args), the model, the sandbox
	InterruptGrace time.Duration  // default DefaultInterruptGrace
	KillGrace      time.Duration  // default DefaultKillGrace

	mu     sync.Mutex
	totals map[string]tokenUsage // thread id: its token count when a turn last ended
}

// total is the token count of thread when a turn last ended.
func (c *Codex) total(thread string) tokenUsage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.totals[thread]
}

// setTotal records the token count of thread.
func (c *Codex) setTotal(thread string, u tokenUsage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.totals == nil || len(c.totals) >= maxThreads {
		c.totals = make(map[string]tokenUsage)
	}
	c.totals[thread] = u
}

// maxThreads bounds the threads whose token counts a Codex remembers.
const maxThreads = 4096

// codexThread is the form of Codex's thread ids (UUIDs).
var codexThread = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// Start starts a process; see Starter. A Resume that is not a thread id
// is refused with modelcli.ErrSessionGone.
func (c *Codex) Start(ctx context.Context, opts Options) (Session, error) {
	if opts.Resume != "" && !codexThread.MatchString(opts.Resume) {
		return nil, fmt.Errorf("codex live: resume %q: not a thread id: %w", opts.Resume, modelcli.ErrSessionGone)
	}
	argv, env, err := c.Adapter.LiveCommand(opts.Env)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir, cmd.SysProcAttr = env, opts.Dir, procAttr()
	s := &codexSession{process: newProcess(c.KillGrace, c.InterruptGrace),
		maxText: c.Adapter.MaxText(), thread: opts.Resume, resume: opts.Resume != "", dir: opts.Dir,
		model: c.Adapter.Model, sandbox: c.Adapter.LiveSandbox(), usageModel: c.Adapter.LiveModel(opts.Env),
		starter: c, base: c.total(opts.Resume),
		notes: make(chan jsonrpc.Msg, 1024), pending: make(map[string]chan jsonrpc.Msg),
	}
	out, err := s.start(cmd)
	if err != nil {
		return nil, fmt.Errorf("codex live: %w", err)
	}
	go s.read(out, cmd)
	return s, nil
}

type codexSession struct {
	process
	maxText        int
	resume         bool   // the thread is to be resumed, not started
	dir            string // the thread's cwd
	model, sandbox string // the thread's settings ("" model: config.toml's)
	starter        *Codex // keeps the threads' token counts

	notes chan jsonrpc.Msg // the turn's notifications and the server's requests; closed at the end of output

	turn       sync.Mutex // one turn at a time; guards the fields below it
	ready      bool       // the thread is open
	usageModel string     // Usage.Model
	base       tokenUsage // the thread's count when the last turn ended

	mu      sync.Mutex
	thread  string
	nextID  int
	pending map[string]chan jsonrpc.Msg // requests awaiting their response, by id
	ending  chan struct{}               // closed when the running turn ends; nil between turns
	asking  bool                        // the running turn puts approval requests to its Ask
	known   chan struct{}               // closed when the running turn's id is known
	turnID  string
}

func (s *codexSession) PID() int              { return s.pid }
func (s *codexSession) Done() <-chan struct{} { return s.done }

func (s *codexSession) SessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.thread
}

// cutMethod marks a line cut short on its way to notes.
const cutMethod = "collab/cut"

// read dispatches standard output, then waits for the process.
func (s *codexSession) read(out io.Reader, cmd *exec.Cmd) {
	r := bufio.NewReaderSize(out, 64<<10)
	limit := s.maxText + 64<<10 // an item carries the text and more
	for {
		b, cut, err := readLine(r, limit)
		if cut {
			s.notes <- jsonrpc.Msg{Method: cutMethod}
		} else if len(b) > 0 {
			s.dispatch(b)
		}
		if err != nil {
			break
		}
	}
	close(s.notes)
	s.err = cmd.Wait()
	close(s.done)
}

// dispatch hands a response to its caller, answers a request of the
// server (and tells the turn), and passes a turn's notification on.
func (s *codexSession) dispatch(b []byte) {
	m, _, err := jsonrpc.Decode(b)
	switch {
	case err != nil:
	case m.IsResponse():
		s.mu.Lock()
		ch := s.pending[jsonrpc.IDKey(m.ID)]
		delete(s.pending, jsonrpc.IDKey(m.ID))
		s.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case m.IsRequest() && askedMethods[m.Method] && s.isAsking():
		s.notes <- m // the turn asks, and answers
	case m.IsRequest():
		res, rerr := answer(m.Method)
		reply := map[string]any{"id": m.ID, "result": res}
		if rerr != nil {
			reply = map[string]any{"id": m.ID, "error": rerr}
		}
		s.write(reply)
		s.notes <- m
	case turnNotes[m.Method]:
		s.notes <- m
	}
}

// askedMethods are the server's requests a turn with an Ask puts to it.
var askedMethods = map[string]bool{
	"item/commandExecution/requestApproval": true,
	"item/fileChange/requestApproval":       true,
}

func (s *codexSession) isAsking() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asking
}

// approve puts an approval request of the server to asks, and answers it.
func (s *codexSession) approve(m jsonrpc.Msg, asks *turnAsks) {
	var p struct {
		Command   *string `json:"command"`
		Cwd       string  `json:"cwd"`
		Reason    string  `json:"reason"`
		GrantRoot string  `json:"grantRoot"`
	}
	json.Unmarshal(m.Params, &p)
	text := "Codex asks to change files"
	if p.GrantRoot != "" {
		text += " under " + p.GrantRoot
	}
	if m.Method == "item/commandExecution/requestApproval" {
		text = "Codex asks to run a command outside its sandbox"
		if p.Command != nil {
			text += ": " + modelcli.Clip(*p.Command, 2000)
		}
		if p.Cwd != "" {
			text += " (in " + p.Cwd + ")"
		}
	}
	if p.Reason != "" {
		text += ". Its reason: " + modelcli.Clip(p.Reason, 1000)
	}
	asks.put(modelcli.Question{Text: text, Options: modelcli.MidRunOptions}, func(ans modelcli.Answer) {
		decision := "decline"
		switch {
		case ans.Allow && ans.Always:
			decision = "acceptForSession"
		case ans.Allow:
			decision = "accept"
		}
		s.write(map[string]any{"id": m.ID, "result": map[string]string{"decision": decision}})
	})
}

// write sends one JSON line.
func (s *codexSession) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = s.in.Write(append(b, '\n'))
	return err
}

// send sends a request; its response comes on the channel.
func (s *codexSession) send(method string, params any) (<-chan jsonrpc.Msg, error) {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	ch := make(chan jsonrpc.Msg, 1)
	s.pending[strconv.Itoa(id)] = ch
	s.mu.Unlock()
	if err := s.write(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		s.mu.Lock()
		delete(s.pending, strconv.Itoa(id))
		s.mu.Unlock()
		return nil, err
	}
	return ch, nil
}

// call sends a request and waits for its result. A process that ends
// first fails it with ErrDied.
func (s *codexSession) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ch, err := s.send(method, params)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDied, method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %w", method, m.Error)
		}
		return m.Result, nil
	case <-s.done:
		return nil, fmt.Errorf("%w: %s: %v", ErrDied, method, cmp.Or(s.err, errors.New("exit status 0")))
	case <-ctx.Done():
		return nil, stopped(ctx)
	}
}

// open does the handshake and opens the thread, once.
func (s *codexSession) open(ctx context.Context) error {
	if s.ready {
		return nil
	}
	_, err := s.call(ctx, "initialize", map[string]any{
		"clientInfo":   map[string]any{"name": "collab", "title": nil, "version": "1"},
		"capabilities": map[string]any{"experimentalApi": false, "requestAttestation": false, "optOutNotificationMethods": quietNotes},
	})
	if err != nil {
		return fmt.Errorf("codex live: %w", err)
	}
	if err := s.write(map[string]any{"method": "initialized"}); err != nil {
		return fmt.Errorf("%w: initialized: %v", ErrDied, err)
	}
	params := map[string]any{"approvalPolicy": "never", "sandbox": s.sandbox}
	if s.dir != "" {
		params["cwd"] = s.dir
	}
	if s.model != "" {
		params["model"] = s.model
	}
	method := "thread/start"
	if s.resume {
		method, params["threadId"], params["excludeTurns"] = "thread/resume", s.SessionID(), true
	}
	res, err := s.call(ctx, method, params)
	var opened struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
		Model string `json:"model"`
	}
	switch {
	case err != nil && s.resume && !errors.Is(err, ErrDied) && ctx.Err() == nil:
		return fmt.Errorf("codex live: resume %s: %v: %w", s.SessionID(), err, modelcli.ErrSessionGone)
	case err != nil:
		return fmt.Errorf("codex live: %w", err)
	case json.Unmarshal(res, &opened) != nil || opened.Thread.ID == "":
		return fmt.Errorf("codex live: %s: no thread in %.200s", method, res)
	}
	s.mu.Lock()
	s.thread = opened.Thread.ID
	s.mu.Unlock()
	s.usageModel = cmp.Or(opened.Model, s.usageModel)
	s.ready = true
	return nil
}

// Turn runs one turn; see Session.
func (s *codexSession) Turn(ctx context.Context, req modelcli.Request) (modelcli.Response, error) {
	s.turn.Lock()
	defer s.turn.Unlock()
	ctx, cancel := s.beginTurn(ctx, &req)
	defer cancel()
	ending := s.begin()
	defer s.end(ending)
	start := time.Now()
	emit := emitter(&req)
	var resp modelcli.Response
	asks := newTurnAsks(ctx, req.Ask)
	err := s.open(ctx)
	if err == nil {
		resp, err = s.run(ctx, req.Prompt, emit, asks)
	} else if ctx.Err() != nil {
		err = stopped(ctx)
	}
	asks.close()
	resp.Duration = time.Since(start)
	resp.Stderr = string(s.stderr.bytes())
	return resp, err
}

// begin marks a turn running.
func (s *codexSession) begin() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ending, s.known, s.turnID = make(chan struct{}), make(chan struct{}), ""
	return s.ending
}

func (s *codexSession) end(ending chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(ending)
	s.ending, s.asking = nil, false
}

// setTurn records the running turn's id, the first time it is said.
func (s *codexSession) setTurn(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turnID == "" && id != "" && s.ending != nil {
		s.turnID = id
		close(s.known)
	}
}

func (s *codexSession) runningTurn() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turnID
}

// run starts the turn and reads its notifications to turn/completed.
// When ctx ends, it interrupts the turn and carries on reading until the
// turn completes, or the process group's end.
func (s *codexSession) run(ctx context.Context, prompt string, emit func([]modelcli.Event), asks *turnAsks) (modelcli.Response, error) {
	thread := s.SessionID()
	p := &codex.Parser{Session: thread, MaxText: s.maxText, Model: s.usageModel}
	started, _ := json.Marshal(map[string]string{"type": "thread.started", "thread_id": thread})
	emit(p.Line(started))
	s.drop()
	policy := "never"
	if asks.asking() {
		policy = "on-request"
	}
	s.mu.Lock()
	s.asking = asks.asking()
	s.mu.Unlock()
	resp, err := s.send("turn/start", map[string]any{"threadId": thread, "approvalPolicy": policy,
		"input": []map[string]any{{"type": "text", "text": prompt, "text_elements": []any{}}}})
	if err != nil {
		return s.died(p, emit, err)
	}
	total := s.base
	stop := ctx.Done()
	for {
		select {
		case m := <-resp:
			resp = nil
			if m.Error != nil {
				failed, _ := json.Marshal(map[string]any{"type": "turn.failed", "error": map[string]string{"message": "turn/start: " + m.Error.Message}})
				emit(p.Line(failed))
				return s.finish(ctx, p, emit)
			}
			var r appNote
			json.Unmarshal(m.Result, &r)
			s.setTurn(r.turnID())
		case m, ok := <-s.notes:
			if !ok {
				<-s.done
				return s.died(p, emit, s.err)
			}
			if m.IsRequest() && askedMethods[m.Method] {
				s.approve(m, asks)
				continue
			}
			if done := s.onNote(m, p, emit, &total); done {
				s.base = total
				s.starter.setTotal(thread, total)
				return s.finish(ctx, p, emit)
			}
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

// onNote feeds one message of the turn to p; it reports whether the turn
// has completed.
func (s *codexSession) onNote(m jsonrpc.Msg, p *codex.Parser, emit func([]modelcli.Event), total *tokenUsage) bool {
	switch {
	case m.Method == cutMethod:
		p.Cut()
		return false
	case m.IsRequest():
		emit([]modelcli.Event{{Time: time.Now(), Kind: modelcli.EventProgress,
			Text: "[codex] declined " + m.Method + ": collab answers no request mid-turn yet"}})
		return false
	}
	var n appNote
	if json.Unmarshal(m.Params, &n) != nil {
		return false
	}
	if id, tid := n.turnID(), s.runningTurn(); id != "" && tid != "" && id != tid {
		return false // an earlier turn's
	}
	switch m.Method {
	case "turn/started":
		s.setTurn(n.turnID())
	case "thread/tokenUsage/updated":
		if n.TokenUsage != nil {
			*total = n.TokenUsage.Total
		}
	}
	if line := execLine(m.Method, n, total.minus(s.base)); line != nil {
		emit(p.Line(line))
	}
	return m.Method == "turn/completed"
}

// drop discards what is left of earlier turns.
func (s *codexSession) drop() {
	for {
		select {
		case _, ok := <-s.notes:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// finish ends a completed turn.
func (s *codexSession) finish(ctx context.Context, p *codex.Parser, emit func([]modelcli.Event)) (modelcli.Response, error) {
	n := p.Events()
	resp, err := p.Finish(nil, nil)
	emit(resp.Events[n:])
	if ctx.Err() != nil {
		return resp, stopped(ctx)
	}
	return resp, err
}

// died ends a turn whose process is gone (or whose input is).
func (s *codexSession) died(p *codex.Parser, emit func([]modelcli.Event), cause error) (modelcli.Response, error) {
	n := p.Events()
	resp, err := p.Finish(fmt.Errorf("codex live: %w", cmp.Or(cause, errors.New("exit status 0"))), s.stderr.bytes())
	emit(resp.Events[n:])
	return resp, fmt.Errorf("%w: %v", ErrDied, err)
}

// Interrupt asks Codex to stop the running turn (turn/interrupt); see
// Session.
func (s *codexSession) Interrupt(ctx context.Context) error {
	s.mu.Lock()
	ending, known, thread := s.ending, s.known, s.thread
	s.mu.Unlock()
	if ending == nil {
		return nil
	}
	var err error
	select {
	case <-known:
		_, err = s.call(ctx, "turn/interrupt", map[string]string{"threadId": thread, "turnId": s.runningTurn()})
	case <-ending:
		return nil
	case <-s.done:
		return nil
	case <-ctx.Done():
		err = ctx.Err()
	}
	return s.awaitInterrupt(ctx, ending, err)
}

// Close ends the input; a process still there a grace later has its
// group ended.
func (s *codexSession) Close() error {
	return s.close(func() {
		for range s.notes {
		}
	})
}
