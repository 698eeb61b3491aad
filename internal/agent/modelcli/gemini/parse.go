package gemini

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/proc"
)

// maxReply bounds the text gathered from chunks, when MaxText is 0.
const maxReply = 8 << 20

// errNoResult is returned when Gemini CLI ended without a result line.
var errNoResult = errors.New("gemini: no result in the output")

// sessionGone are the messages of a resume Gemini CLI refuses.
var sessionGone = []string{"Error resuming session"}

// Parser turns Gemini CLI's stream-json output, fed a line at a time, into
// events and, at the end, a response. It does no I/O; a zero Parser is
// ready to use. It is not safe for concurrent use.
type Parser struct {
	Now     func() time.Time // the clock of event times; nil: time.Now
	Session string           // the session the run resumes, "" if none
	MaxText int              // Response.Text longer than this is cut; 0: no limit

	c        modelcli.Collector
	chunk    strings.Builder // assistant text not yet sent as progress
	chunkAt  time.Time       // when its last piece came
	reply    strings.Builder // assistant text since the last tool call
	replyCut bool            // reply went past its bound
	result   *record         // the result line, once seen
	model    string          // init's model
}

// record is one line of stream-json, of any type.
type record struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"` // init
	Model     string `json:"model"`      // init
	Role      string `json:"role"`       // message
	Content   string `json:"content"`    // message
	ToolName  string `json:"tool_name"`  // tool_use
	// tool_use: the tool's arguments.
	Parameters json.RawMessage `json:"parameters"`
	Status     string          `json:"status"` // result
	Message    string          `json:"message"`
	Error      *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"` // result
	Stats *struct {
		InputTokens  int64  `json:"input_tokens"`
		OutputTokens int64  `json:"output_tokens"`
		Cached       int64  `json:"cached"`
		Input        *int64 `json:"input"`
	} `json:"stats"` // result
}

func (p *Parser) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Cut records that a line was cut short before it reached Line: the
// response is then marked truncated.
func (p *Parser) Cut() { p.c.Cut() }

// Events returns how many events the parser has produced so far.
func (p *Parser) Events() int { return len(p.c.Resp.Events) }

// replyLimit is the most bytes of reply text kept.
func (p *Parser) replyLimit() int {
	if p.MaxText > 0 {
		return p.MaxText
	}
	return maxReply
}

// flush sends the assistant text gathered so far as one progress event.
func (p *Parser) flush() {
	if strings.TrimSpace(p.chunk.String()) != "" {
		p.c.Add(modelcli.Event{Time: p.chunkAt, Kind: modelcli.EventProgress, Text: p.chunk.String()})
	}
	p.chunk.Reset()
}

// strayAt is the time of a stray line's event: the text gathered before
// the line goes first.
func (p *Parser) strayAt() time.Time {
	p.flush()
	return p.now()
}

// Line parses one line of output (without its newline) and returns the
// events it produced. A line that is not a JSON object is a stray line:
// an error event carrying it (see modelcli.Collector.Decode), and kept,
// in part, for error messages.
func (p *Parser) Line(line []byte) []modelcli.Event {
	var r record
	n := len(p.c.Resp.Events)
	line, ok := p.c.Decode(line, &r, p.strayAt)
	if !ok {
		return p.c.Resp.Events[n:]
	}
	t := p.now()
	if r.Type == "message" && r.Role == "assistant" {
		// Text comes in chunks: gather them until something else happens.
		if p.chunk.Len() < modelcli.MaxEventText {
			p.chunk.WriteString(r.Content)
		}
		p.chunkAt = t
		text := r.Content
		if room := p.replyLimit() - p.reply.Len(); len(text) > room {
			text, p.replyCut = text[:max(room, 0)], true
		}
		p.reply.WriteString(text)
		return nil
	}
	p.flush()
	switch r.Type {
	case "init":
		p.c.Resp.Session, p.model = r.SessionID, r.Model
		p.c.Add(modelcli.Event{Time: t, Kind: modelcli.EventStarted, Text: r.SessionID, Data: modelcli.EventData(line)})
	case "tool_use":
		p.reply.Reset()
		p.replyCut = false
		p.c.Add(modelcli.Event{Time: t, Kind: modelcli.EventToolCall, Tool: r.ToolName, Text: modelcli.Describe(r.Parameters, describeKeys), Data: modelcli.EventData(r.Parameters)})
	case "tool_result":
		p.reply.Reset()
		p.replyCut = false
	case "error":
		p.c.Add(modelcli.Event{Time: t, Kind: modelcli.EventProgress, Text: "[gemini] " + r.Message, Data: modelcli.EventData(line)})
	case "result":
		p.result = &r
		if s := r.Stats; s != nil {
			in := s.InputTokens - s.Cached
			if s.Input != nil {
				in = *s.Input
			}
			p.c.Resp.Usage = modelcli.Usage{Input: max(in, 0), Output: s.OutputTokens, CacheRead: s.Cached, Model: p.model}
		}
	}
	return p.c.Resp.Events[n:]
}

// Finish ends the run: given how the process ended (runErr, nil if it
// exited 0) and the tail of its standard error, it adds the last events
// (any pending text, then completed or error) and returns the response and
// the run's error.
func (p *Parser) Finish(runErr error, stderr []byte) (modelcli.Response, error) {
	p.flush()
	err := p.outcome(runErr, stderr)
	var text string
	if err == nil {
		text = strings.TrimSpace(p.reply.String())
		if text == "" {
			err = modelcli.ErrEmpty
		} else if p.replyCut {
			text = modelcli.Clip(text+"…", p.replyLimit())
		}
	}
	return p.c.Finish(p.now(), text, p.replyCut, err)
}

// outcome decides whether the run failed, and why.
func (p *Parser) outcome(runErr error, stderr []byte) error {
	var exit *proc.ExitError
	if errors.As(runErr, &exit) && exit.Cause != nil {
		return runErr // stopped: timeout or ctx (Gemini CLI exits 0 on SIGTERM)
	}
	if r := p.result; r != nil {
		if r.Status == "success" {
			return nil
		}
		msg := "status " + r.Status
		if r.Error != nil && r.Error.Message != "" {
			msg = apiMessage(r.Error.Message)
		}
		return fmt.Errorf("gemini: %s", msg)
	}
	msg := stderrMessage(stderr)
	if p.Session != "" && modelcli.Mentions([]byte(msg), sessionGone) {
		return fmt.Errorf("gemini: resume %s: %s: %w", p.Session, msg, modelcli.ErrSessionGone)
	}
	if msg == "" && len(p.c.Other()) > 0 {
		msg = modelcli.LastLine(p.c.Other())
	}
	switch {
	case runErr != nil && msg != "" && exit != nil:
		return fmt.Errorf("gemini: %s (exit status %d)", msg, exit.Code)
	case runErr != nil:
		return runErr
	case msg != "":
		return fmt.Errorf("%w: %s", errNoResult, msg)
	}
	return errNoResult
}

// apiMessage returns the message of an API error as Gemini CLI reports it,
// "[API Error: {"error":{"code":400,"message":M,"status":S}}]", as
// "M (HTTP 400 S)"; any other message as it is.
func apiMessage(msg string) string {
	body := strings.TrimSuffix(strings.TrimPrefix(msg, "[API Error: "), "]")
	var e struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if !strings.HasPrefix(body, "{") || json.Unmarshal([]byte(body), &e) != nil || e.Error.Message == "" {
		return msg
	}
	return strings.TrimSpace(fmt.Sprintf("%s (HTTP %d %s)", e.Error.Message, e.Error.Code, e.Error.Status))
}

// stderrNoise are lines Gemini CLI prints on standard error in every run.
var stderrNoise = []string{"Warning: 256-color support", "Ripgrep is not available", "[STARTUP]", "YOLO mode is enabled", "Loaded cached credentials"}

// stderrMessage returns Gemini CLI's error from its standard error: the
// message of an indented {"error": …} object (output format json), else
// the first line starting "Error", else the last line that is not noise
// or part of a stack trace.
func stderrMessage(stderr []byte) string {
	s := string(stderr)
	if i := strings.LastIndex(s, "\n{"); i >= 0 || strings.HasPrefix(s, "{") {
		var v struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(s[i+1:]), &v) == nil && v.Error.Message != "" {
			return modelcli.Clip(apiMessage(v.Error.Message), 500)
		}
	}
	var last string
next:
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "Error") {
			return modelcli.Clip(line, 500)
		}
		if line == "" || line == "}" || line == "{" || strings.HasPrefix(line, "at ") || strings.HasPrefix(line, "status:") {
			continue
		}
		for _, n := range stderrNoise {
			if strings.HasPrefix(line, n) {
				continue next
			}
		}
		last = line
	}
	return modelcli.Clip(last, 500)
}

// Parse parses a whole output, as Line and Finish would with a process
// that exited 0.
func Parse(out []byte) (modelcli.Response, error) {
	return modelcli.ParseOutput(&Parser{}, out)
}

// describeKeys are the tool-parameter fields that say best what a call
// does, best first.
var describeKeys = []string{"command", "file_path", "absolute_path", "path", "dir_path", "pattern", "url", "query", "prompt", "description"}
