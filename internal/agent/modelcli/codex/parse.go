package codex

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/proc"
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
	Model   string           // Usage.Model: the model the run uses (Codex does not say)

	c       modelcli.Collector
	text    string          // the last agent message
	turns   int             // turn.completed lines seen
	failed  string          // turn.failed's message
	notice  string          // the last error line's message
	started map[string]bool // items whose tool call was reported when they started
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
func (p *Parser) Cut() { p.c.Cut() }

// Events returns how many events the parser has produced so far.
func (p *Parser) Events() int { return len(p.c.Resp.Events) }

// Turns returns how many turns completed.
func (p *Parser) Turns() int { return p.turns }

// Line parses one line of output (without its newline) and returns the
// events it produced. A line that is not a JSON object is a stray line:
// an error event carrying it (see modelcli.Collector.Decode), and kept,
// in part, for error messages.
func (p *Parser) Line(line []byte) []modelcli.Event {
	var r record
	n := len(p.c.Resp.Events)
	line, ok := p.c.Decode(line, &r, p.now)
	if !ok {
		return p.c.Resp.Events[n:]
	}
	t := p.now()
	switch r.Type {
	case "thread.started":
		p.c.Resp.Session = r.ThreadID
		p.c.Add(modelcli.Event{Time: t, Kind: modelcli.EventStarted, Text: r.ThreadID, Data: modelcli.EventData(line)})
	case "item.started":
		if r.Item != nil {
			if e, ok := toolCall(r.Item); ok {
				if p.started == nil {
					p.started = make(map[string]bool)
				}
				p.started[r.Item.ID] = true
				e.Time, e.Data = t, modelcli.EventData(line)
				p.c.Add(e)
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
				p.c.Add(modelcli.Event{Time: t, Kind: modelcli.EventProgress, Text: it.Text})
			}
		case "error":
			p.c.Add(modelcli.Event{Time: t, Kind: modelcli.EventProgress, Text: "[codex] " + it.Message, Data: modelcli.EventData(line)})
		default:
			if e, ok := toolCall(it); ok && !p.started[it.ID] {
				e.Time, e.Data = t, modelcli.EventData(line)
				p.c.Add(e)
			}
		}
	case "turn.completed":
		p.turns++
		if u := r.Usage; u != nil {
			p.c.Resp.Usage.Input += max(u.InputTokens-u.CachedInputTokens, 0)
			p.c.Resp.Usage.CacheRead += u.CachedInputTokens
			p.c.Resp.Usage.CacheWrite += u.CacheWriteTokens
			p.c.Resp.Usage.Output += u.OutputTokens
			p.c.Resp.Usage.Model = p.Model
		}
	case "turn.failed":
		p.failed = "turn failed"
		if r.Error != nil && r.Error.Message != "" {
			p.failed = apiMessage(r.Error.Message)
		}
	case "error":
		p.notice = apiMessage(r.Message)
		p.c.Add(modelcli.Event{Time: t, Kind: modelcli.EventProgress, Text: "[codex] " + p.notice, Data: modelcli.EventData(line)})
	}
	return p.c.Resp.Events[n:]
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

// Finish ends the run: given how the process ended (runErr, nil if it
// exited 0) and the tail of its standard error, it adds the last event
// (completed or error) and returns the response and the run's error.
func (p *Parser) Finish(runErr error, stderr []byte) (modelcli.Response, error) {
	err := p.outcome(runErr, stderr)
	var text string
	var cut bool
	if err == nil {
		text = strings.TrimSpace(p.text)
		if text == "" {
			err = modelcli.ErrEmpty
		} else if p.MaxText > 0 && len(text) > p.MaxText {
			text, cut = modelcli.Clip(text, p.MaxText), true
		}
	}
	return p.c.Finish(p.now(), text, cut, err)
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
	if p.Session != "" && modelcli.Mentions([]byte(msg), sessionGone) {
		return fmt.Errorf("codex: resume %s: %s: %w", p.Session, msg, modelcli.ErrSessionGone)
	}
	switch {
	case p.notice != "":
		msg = p.notice
	case msg == "" && len(p.c.Other()) > 0:
		msg = modelcli.LastLine(p.c.Other())
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
			return modelcli.Clip(msg, 500)
		}
		switch {
		case line == "", line == "Stack backtrace:", strings.HasPrefix(line, "WARNING:"),
			strings.HasSuffix(line, ": <unknown>"), strings.HasPrefix(line, "at "):
			continue
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
