package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/claude"
	"github.com/collabdev/collab/internal/plumbing/proc"
)

// Claude Code's live protocol (claude -p --input-format stream-json
// --output-format stream-json --verbose): a turn is one line on standard
// input,
//
//	{"type":"user","message":{"role":"user","content":PROMPT}}
//
// and the output of the per-message adapter on standard output (a
// system/init line, assistant lines, …), ended by the turn's result line;
// the result's total_cost_usd counts from the start of the process. An
// interrupt is a control request,
//
//	{"type":"control_request","request_id":ID,"request":{"subtype":"interrupt"}}
//
// answered by a control_response line, and the turn then ends with its
// result line. At the end of its input the process exits.
//
// The process runs with --permission-prompt-tool stdio: what its
// permission mode would ask a person comes as a control request,
//
//	{"type":"control_request","request_id":ID,"request":{"subtype":"can_use_tool",
//	 "tool_name":T,"input":{…},"description":…,"permission_suggestions":[…]}}
//
// put to the turn's Ask (ask.go), and answered
//
//	{"type":"control_response","response":{"subtype":"success","request_id":ID,
//	 "response":{"behavior":"allow","updatedInput":{…},"updatedPermissions":[…]}}}
//
// (the suggested rules only for an answer that allows always), or with
// {"behavior":"deny","message":…}. A refusal reaches the model as the
// tool's error, and the turn's result lists it among its permission
// denials, as a per-message run's does.

// Defaults of a zero Claude.
const (
	DefaultInterruptGrace = 5 * time.Second // from an interrupt to ending the process group
	DefaultKillGrace      = 5 * time.Second // from SIGTERM to SIGKILL, and from end of input to SIGTERM
	maxStderr             = 8 << 10
)

// Claude starts Claude Code live sessions.
type Claude struct {
	Adapter        *claude.Adapter // the command line (model, MCP servers, allowed tools, …)
	InterruptGrace time.Duration   // default DefaultInterruptGrace
	KillGrace      time.Duration   // default DefaultKillGrace
}

// Start starts a process.
func (c *Claude) Start(ctx context.Context, opts Options) (Session, error) {
	argv, env, err := c.Adapter.LiveCommand(opts.Resume, opts.AllowTools, opts.Env)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env, cmd.Dir, cmd.SysProcAttr = env, opts.Dir, procAttr()
	s := &claudeSession{process: newProcess(c.KillGrace, c.InterruptGrace),
		maxText: c.Adapter.MaxText(), session: opts.Resume, lines: make(chan line, 64)}
	out, err := s.start(cmd)
	if err != nil {
		return nil, fmt.Errorf("claude live: %w", err)
	}
	go s.read(out, cmd)
	return s, nil
}

// line is one line of standard output, cut when longer than the cap.
type line struct {
	b   []byte
	cut bool
}

type claudeSession struct {
	process
	maxText int
	lines   chan line // standard output, closed at its end

	turn sync.Mutex // one turn at a time

	mu      sync.Mutex
	session string
	cost    float64       // total_cost_usd so far
	ending  chan struct{} // closed when the running turn ends; nil between turns
}

func (s *claudeSession) PID() int              { return s.pid }
func (s *claudeSession) Done() <-chan struct{} { return s.done }

func (s *claudeSession) SessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.session
}

// read feeds standard output to lines, then waits for the process.
func (s *claudeSession) read(out io.Reader, cmd *exec.Cmd) {
	r := bufio.NewReaderSize(out, 64<<10)
	limit := s.maxText + 64<<10 // a result line carries the text and more
	for {
		b, cut, err := readLine(r, limit)
		if len(b) > 0 || cut {
			s.lines <- line{b: b, cut: cut}
		}
		if err != nil {
			break
		}
	}
	close(s.lines)
	s.err = cmd.Wait()
	close(s.done)
}

// readLine reads one line, keeping at most limit bytes of it.
func readLine(r *bufio.Reader, limit int) ([]byte, bool, error) {
	var b []byte
	cut := false
	for {
		frag, err := r.ReadSlice('\n')
		if room := limit - len(b); room > 0 {
			b = append(b, frag[:min(len(frag), room)]...)
		}
		if len(b) >= limit {
			cut = true
		}
		if err != bufio.ErrBufferFull {
			return bytes.TrimRight(b, "\r\n"), cut, err
		}
	}
}

// write sends one JSON line.
func (s *claudeSession) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = s.in.Write(append(b, '\n'))
	return err
}

type userLine struct {
	Type    string `json:"type"`
	Message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
}

// Turn runs one turn; see Session.
func (s *claudeSession) Turn(ctx context.Context, req modelcli.Request) (modelcli.Response, error) {
	s.turn.Lock()
	defer s.turn.Unlock()
	ctx, cancel := s.beginTurn(ctx, &req)
	defer cancel()
	ending := s.begin()
	defer s.end(ending)
	start := time.Now()
	p := &claude.Parser{Session: s.SessionID(), MaxText: s.maxText}
	emit := emitter(&req)
	u := userLine{Type: "user"}
	u.Message.Role, u.Message.Content = "user", req.Prompt
	var resp modelcli.Response
	var err error
	asks := newTurnAsks(ctx, req.Ask)
	if werr := s.write(u); werr != nil {
		resp, err = s.died(p, emit, werr)
	} else {
		resp, err = s.await(ctx, p, emit, asks)
	}
	asks.close()
	if asks.asking() {
		// What it would have asked was asked: the denials its result lists
		// were answered no, not questions to ask again after the turn.
		resp.Question = nil
	}
	resp.Duration = time.Since(start)
	resp.Stderr = string(s.stderr.bytes())
	return resp, err
}

// begin marks a turn running.
func (s *claudeSession) begin() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ending = make(chan struct{})
	return s.ending
}

func (s *claudeSession) end(ending chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(ending)
	s.ending = nil
}

// await reads the turn's output up to its result line. When ctx ends, it
// interrupts the turn and carries on reading until the result, or the
// process group's end.
func (s *claudeSession) await(ctx context.Context, p *claude.Parser, emit func([]modelcli.Event), asks *turnAsks) (modelcli.Response, error) {
	stop := ctx.Done()
	for {
		select {
		case l, ok := <-s.lines:
			if !ok {
				<-s.done
				return s.died(p, emit, s.err)
			}
			if l.cut {
				p.Cut()
			}
			if !isResult(l.b) {
				switch recordType(l.b) {
				case "control_response":
				case "control_request":
					s.permission(l.b, asks)
				default:
					emit(p.Line(l.b))
				}
				continue
			}
			emit(p.Line(l.b))
			n := p.Events()
			resp, err := p.Finish(nil, nil)
			emit(resp.Events[n:]) // Finish's
			s.account(&resp)
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

// account turns the process's running cost into the turn's, and keeps
// the session id.
func (s *claudeSession) account(resp *modelcli.Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := resp.CostUSD
	resp.CostUSD = max(total-s.cost, 0)
	s.cost = total
	if resp.Session != "" {
		s.session = resp.Session
	}
}

// died ends a turn whose process is gone (or whose input is).
func (s *claudeSession) died(p *claude.Parser, emit func([]modelcli.Event), cause error) (modelcli.Response, error) {
	n := p.Events()
	if cause == nil {
		cause = errors.New("exit status 0")
	}
	resp, err := p.Finish(fmt.Errorf("claude live: %w", cause), s.stderr.bytes())
	emit(resp.Events[n:])
	if resp.Session != "" {
		s.mu.Lock()
		s.session = resp.Session
		s.mu.Unlock()
	}
	if errors.Is(err, modelcli.ErrSessionGone) {
		return resp, err
	}
	return resp, fmt.Errorf("%w: %v", ErrDied, err)
}

// stopped is the error of a turn whose context ended.
func stopped(ctx context.Context) error {
	if c := context.Cause(ctx); c != nil && c != ctx.Err() {
		return c
	}
	return ctx.Err()
}

func isResult(b []byte) bool { return recordType(b) == "result" }

// controlRequest is a control request of Claude Code's.
type controlRequest struct {
	RequestID string `json:"request_id"`
	Request   struct {
		Subtype     string          `json:"subtype"`
		ToolName    string          `json:"tool_name"`
		Input       json.RawMessage `json:"input"`
		Description string          `json:"description"`
		Suggestions json.RawMessage `json:"permission_suggestions"`
	} `json:"request"`
}

// permission answers a control request: a can_use_tool through asks,
// anything else with an error.
func (s *claudeSession) permission(b []byte, asks *turnAsks) {
	var r controlRequest
	if json.Unmarshal(b, &r) != nil || r.RequestID == "" {
		return
	}
	if r.Request.Subtype != "can_use_tool" {
		s.write(controlResponse(r.RequestID, nil, "collab: "+r.Request.Subtype+" is not supported"))
		return
	}
	reply := func(ans modelcli.Answer) { s.write(controlResponse(r.RequestID, permissionResult(&r, ans), "")) }
	if !asks.asking() {
		reply(modelcli.Answer{Text: "no one is asked mid-run"})
		return
	}
	asks.put(toolQuestion("Claude Code", r.Request.ToolName, r.Request.Description, r.Request.Input), reply)
}

// permissionResult is the answer to a can_use_tool request.
func permissionResult(r *controlRequest, ans modelcli.Answer) map[string]any {
	if !ans.Allow {
		return map[string]any{"behavior": "deny", "message": refusalText(ans)}
	}
	input := r.Request.Input
	if len(input) == 0 || input[0] != '{' {
		input = json.RawMessage("{}")
	}
	res := map[string]any{"behavior": "allow", "updatedInput": input}
	if ans.Always && len(r.Request.Suggestions) > 0 && r.Request.Suggestions[0] == '[' {
		res["updatedPermissions"] = r.Request.Suggestions
	}
	return res
}

// controlResponse is the line that answers control request id: with
// response, or with the error errText.
func controlResponse(id string, response any, errText string) map[string]any {
	r := map[string]any{"subtype": "success", "request_id": id, "response": response}
	if errText != "" {
		r = map[string]any{"subtype": "error", "request_id": id, "error": errText}
	}
	return map[string]any{"type": "control_response", "response": r}
}

// recordType is the type of a JSON line, "" if it is not an object.
func recordType(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return ""
	}
	var r struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(b, &r) != nil {
		return ""
	}
	return r.Type
}

// Interrupt asks Claude Code to stop the running turn; see Session.
func (s *claudeSession) Interrupt(ctx context.Context) error {
	s.mu.Lock()
	ending := s.ending
	s.mu.Unlock()
	if ending == nil {
		return nil
	}
	err := s.write(map[string]any{"type": "control_request", "request_id": fmt.Sprintf("interrupt-%d", time.Now().UnixNano()),
		"request": map[string]string{"subtype": "interrupt"}})
	return s.awaitInterrupt(ctx, ending, err)
}

// Close ends the input; a process still there a grace later has its
// group ended.
func (s *claudeSession) Close() error {
	return s.close(func() {
		for range s.lines {
		}
	})
}
