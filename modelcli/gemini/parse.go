package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"collab/modelcli"
	"collab/proc"
)

// Bounds on what an event carries.
const (
	maxEventText = 4 << 10 // Event.Text
	maxEventData = 4 << 10 // Event.Data: larger records are left out
	maxOther     = 2 << 10 // output that was not JSON, kept for error messages
	maxReply     = 8 << 20 // text gathered from chunks, when MaxText is 0
)

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

	resp     modelcli.Response
	chunk    strings.Builder // assistant text not yet sent as progress
	chunkAt  time.Time       // when its last piece came
	reply    strings.Builder // assistant text since the last tool call
	replyCut bool            // reply went past its bound
	result   *record         // the result line, once seen
	other    []byte          // the start of any output that was not JSON
	cut      bool            // a line was cut before it reached the parser
}

// record is one line of stream-json, of any type.
type record struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"` // init
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
func (p *Parser) Cut() { p.cut = true }

// Events returns how many events the parser has produced so far.
func (p *Parser) Events() int { return len(p.resp.Events) }

func (p *Parser) add(e modelcli.Event) {
	e.Text = clip(e.Text, maxEventText)
	p.resp.Events = append(p.resp.Events, e)
}

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
		p.add(modelcli.Event{Time: p.chunkAt, Kind: modelcli.EventProgress, Text: p.chunk.String()})
	}
	p.chunk.Reset()
}

// Line parses one line of output (without its newline) and returns the
// events it produced. A line that is not a JSON object is kept, in part,
// for error messages.
func (p *Parser) Line(line []byte) []modelcli.Event {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	var r record
	if line[0] != '{' || json.Unmarshal(line, &r) != nil {
		p.noteOther(line)
		return nil
	}
	n := len(p.resp.Events)
	t := p.now()
	if r.Type == "message" && r.Role == "assistant" {
		// Text comes in chunks: gather them until something else happens.
		if p.chunk.Len() < maxEventText {
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
		p.resp.Session = r.SessionID
		p.add(modelcli.Event{Time: t, Kind: modelcli.EventStarted, Text: r.SessionID, Data: data(line)})
	case "tool_use":
		p.reply.Reset()
		p.replyCut = false
		p.add(modelcli.Event{Time: t, Kind: modelcli.EventToolCall, Tool: r.ToolName, Text: describe(r.Parameters), Data: data(r.Parameters)})
	case "tool_result":
		p.reply.Reset()
		p.replyCut = false
	case "error":
		p.add(modelcli.Event{Time: t, Kind: modelcli.EventProgress, Text: "[gemini] " + r.Message, Data: data(line)})
	case "result":
		p.result = &r
		if s := r.Stats; s != nil {
			in := s.InputTokens - s.Cached
			if s.Input != nil {
				in = *s.Input
			}
			p.resp.Usage = modelcli.Usage{Input: max(in, 0), Output: s.OutputTokens, CacheRead: s.Cached}
		}
	}
	return p.resp.Events[n:]
}

func (p *Parser) noteOther(line []byte) {
	if room := maxOther - len(p.other); room > 0 {
		if len(p.other) > 0 {
			p.other = append(p.other, '\n')
		}
		p.other = append(p.other, line[:min(len(line), room)]...)
	}
}

// Finish ends the run: given how the process ended (runErr, nil if it
// exited 0) and the tail of its standard error, it adds the last events
// (any pending text, then completed or error) and returns the response and
// the run's error.
func (p *Parser) Finish(runErr error, stderr []byte) (modelcli.Response, error) {
	p.flush()
	resp := p.resp
	resp.Events = append([]modelcli.Event(nil), p.resp.Events...)
	resp.Truncated = p.cut
	err := p.outcome(runErr, stderr)
	if err == nil {
		resp.Text = strings.TrimSpace(p.reply.String())
		if resp.Text == "" {
			err = modelcli.ErrEmpty
		} else if p.replyCut {
			resp.Text, resp.Truncated = clip(resp.Text+"…", p.replyLimit()), true
		}
	}
	if err != nil {
		resp.Text = ""
		resp.Events = append(resp.Events, modelcli.Event{Time: p.now(), Kind: modelcli.EventError, Text: clip(err.Error(), maxEventText)})
		return resp, err
	}
	resp.Events = append(resp.Events, modelcli.Event{Time: p.now(), Kind: modelcli.EventCompleted, Text: clip(resp.Text, maxEventText)})
	return resp, nil
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
	if p.Session != "" && mentions([]byte(msg), sessionGone) {
		return fmt.Errorf("gemini: resume %s: %s: %w", p.Session, msg, modelcli.ErrSessionGone)
	}
	if msg == "" && len(p.other) > 0 {
		msg = lastLine(p.other)
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
			return clip(apiMessage(v.Error.Message), 500)
		}
	}
	var last string
next:
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "Error") {
			return clip(line, 500)
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
	return clip(last, 500)
}

// Parse parses a whole output, as Line and Finish would with a process
// that exited 0.
func Parse(out []byte) (modelcli.Response, error) {
	var p Parser
	for line := range bytes.SplitSeq(out, []byte{'\n'}) {
		p.Line(line)
	}
	return p.Finish(nil, nil)
}

// describeKeys are the tool-parameter fields that say best what a call
// does, best first.
var describeKeys = []string{"command", "file_path", "absolute_path", "path", "dir_path", "pattern", "url", "query", "prompt", "description"}

// describe returns a short account of a tool's parameters: its command,
// file, pattern or the like, else the parameters themselves.
func describe(params json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(params, &m) != nil {
		return ""
	}
	for _, k := range describeKeys {
		if s, ok := m[k].(string); ok && s != "" {
			return clip(s, 500)
		}
	}
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m)
	return clip(string(b), 500)
}

// data returns a copy of a JSON record for Event.Data, or nil if it is
// too large.
func data(b []byte) json.RawMessage {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || len(b) > maxEventData || !json.Valid(b) {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	mark := "…"
	if n < len(mark) {
		mark = ""
	}
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func mentions(b []byte, needles []string) bool {
	for _, n := range needles {
		if bytes.Contains(b, []byte(n)) {
			return true
		}
	}
	return false
}

// lastLine returns the last non-blank line of b, clipped.
func lastLine(b []byte) string {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = bytes.TrimSpace(b[i+1:])
	}
	return clip(string(b), 500)
}
