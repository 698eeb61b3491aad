package codex

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
)

// errNoResult is returned when Codex exited 0 without ending its turn.
var errNoResult = errors.New("codex: no turn.completed in the output")

// sessionGone are the messages of a resume Codex refuses.
var sessionGone = []string{"no rollout found for thread id", "thread/resume failed"}

// Parser turns the output of codex exec --json, fed a line at a time, into
// events and, at the end, a response. It does no I/O; a zero Parser is
// ready to use. It is not safe for concurrent use.
type Parser struct {
	Now     func() time.Time // the clock of event times; nil: time.Now
	Session string           // the thread the run resumes, "" if none
	MaxText int              // Response.Text longer than this is cut; 0: no limit

	resp    modelcli.Response
	text    string          // the last agent message
	turns   int             // turn.completed lines seen
	failed  string          // turn.failed's message
	notice  string          // the last error line's message
	started map[string]bool // items whose tool call was reported when they started
	other   []byte          // the start of any output that was not JSON
	cut     bool            // a line was cut before it reached the parser
}

// record is one line of output, of any type.
type record struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"` // thread.started
	Item     *item  `json:"item"`      // item.*
	Usage    *usage `json:"usage"`     // turn.completed
	Message  string `json:"message"`   // error
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"` // turn.failed
}

type item struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Text    string `json:"text"`    // agent_message, reasoning
	Message string `json:"message"` // error
	Command string `json:"command"` // command_execution
	Changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"` // file_change
	Server string `json:"server"` // mcp_tool_call
	Tool   string `json:"tool"`   // mcp_tool_call
	Query  string `json:"query"`  // web_search
}

type usage struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	CacheWriteTokens  int64 `json:"cache_write_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
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

// Turns returns how many turns completed.
func (p *Parser) Turns() int { return p.turns }

func (p *Parser) add(e modelcli.Event) {
	e.Text = clip(e.Text, maxEventText)
	p.resp.Events = append(p.resp.Events, e)
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
	switch r.Type {
	case "thread.started":
		p.resp.Session = r.ThreadID
		p.add(modelcli.Event{Time: t, Kind: modelcli.EventStarted, Text: r.ThreadID, Data: data(line)})
	case "item.started":
		if r.Item != nil {
			if e, ok := toolCall(r.Item); ok {
				if p.started == nil {
					p.started = make(map[string]bool)
				}
				p.started[r.Item.ID] = true
				e.Time, e.Data = t, data(line)
				p.add(e)
			}
		}
	case "item.completed":
		it := r.Item
		if it == nil {
			break
		}
		switch it.Type {
		case "agent_message":
			p.text = it.Text
			if strings.TrimSpace(it.Text) != "" {
				p.add(modelcli.Event{Time: t, Kind: modelcli.EventProgress, Text: it.Text})
			}
		case "error":
			p.add(modelcli.Event{Time: t, Kind: modelcli.EventProgress, Text: "[codex] " + it.Message, Data: data(line)})
		default:
			if e, ok := toolCall(it); ok && !p.started[it.ID] {
				e.Time, e.Data = t, data(line)
				p.add(e)
			}
		}
	case "turn.completed":
		p.turns++
		if u := r.Usage; u != nil {
			p.resp.Usage.Input += max(u.InputTokens-u.CachedInputTokens, 0)
			p.resp.Usage.CacheRead += u.CachedInputTokens
			p.resp.Usage.CacheWrite += u.CacheWriteTokens
			p.resp.Usage.Output += u.OutputTokens
		}
	case "turn.failed":
		p.failed = "turn failed"
		if r.Error != nil && r.Error.Message != "" {
			p.failed = apiMessage(r.Error.Message)
		}
	case "error":
		p.notice = apiMessage(r.Message)
		p.add(modelcli.Event{Time: t, Kind: modelcli.EventProgress, Text: "[codex] " + p.notice, Data: data(line)})
	}
	return p.resp.Events[n:]
}

// toolCall returns the tool-call event of an item that is one.
func toolCall(it *item) (modelcli.Event, bool) {
	e := modelcli.Event{Kind: modelcli.EventToolCall, Tool: it.Type}
	switch it.Type {
	case "command_execution":
		e.Text = it.Command
	case "file_change":
		var paths []string
		for _, c := range it.Changes {
			paths = append(paths, strings.TrimSpace(c.Kind+" "+c.Path))
		}
		e.Text = strings.Join(paths, ", ")
	case "mcp_tool_call":
		e.Tool = "mcp__" + it.Server + "__" + it.Tool
	case "web_search":
		e.Text = it.Query
	default:
		if !strings.HasSuffix(it.Type, "_call") {
			return e, false
		}
	}
	return e, true
}

// apiMessage returns the message inside an API error body, when msg is
// one ({"error":{"message":…}}), else msg.
func apiMessage(msg string) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if strings.HasPrefix(msg, "{") && json.Unmarshal([]byte(msg), &body) == nil && body.Error.Message != "" {
		return body.Error.Message
	}
	return msg
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
// exited 0) and the tail of its standard error, it adds the last event
// (completed or error) and returns the response and the run's error.
func (p *Parser) Finish(runErr error, stderr []byte) (modelcli.Response, error) {
	resp := p.resp
	resp.Events = append([]modelcli.Event(nil), p.resp.Events...)
	resp.Truncated = p.cut
	err := p.outcome(runErr, stderr)
	if err == nil {
		resp.Text = strings.TrimSpace(p.text)
		if resp.Text == "" {
			err = modelcli.ErrEmpty
		} else if p.MaxText > 0 && len(resp.Text) > p.MaxText {
			resp.Text, resp.Truncated = clip(resp.Text, p.MaxText), true
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
		return runErr // stopped: timeout or ctx
	}
	if p.failed != "" {
		return fmt.Errorf("codex: %s", p.failed)
	}
	if p.turns > 0 {
		return nil // even if it then exited non-zero: the turn is whole
	}
	msg := stderrMessage(stderr)
	if p.Session != "" && mentions([]byte(msg), sessionGone) {
		return fmt.Errorf("codex: resume %s: %s: %w", p.Session, msg, modelcli.ErrSessionGone)
	}
	switch {
	case p.notice != "":
		msg = p.notice
	case msg == "" && len(p.other) > 0:
		msg = lastLine(p.other)
	}
	switch {
	case runErr != nil && msg != "" && exit != nil:
		return fmt.Errorf("codex: %s (exit status %d)", msg, exit.Code)
	case runErr != nil:
		return runErr
	case msg != "":
		return fmt.Errorf("%w: %s", errNoResult, msg)
	}
	return errNoResult
}

// stderrMessage returns Codex's error from its standard error: the last
// line starting "Error:" (it is followed by a backtrace), else the last
// line that is not a warning or a backtrace frame.
func stderrMessage(stderr []byte) string {
	var last string
	for line := range strings.Lines(string(stderr)) {
		line = strings.TrimSpace(line)
		if msg, ok := strings.CutPrefix(line, "Error: "); ok {
			return clip(msg, 500)
		}
		switch {
		case line == "", line == "Stack backtrace:", strings.HasPrefix(line, "WARNING:"),
			strings.HasSuffix(line, ": <unknown>"), strings.HasPrefix(line, "at "):
			continue
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
