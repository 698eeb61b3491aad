package claude

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

// errNoResult is returned when the CLI exited 0 without a result line.
var errNoResult = errors.New("claude: no result in the output")

// sessionGone are the messages of a resume Claude Code refuses.
var sessionGone = []string{
	"No conversation found with session ID",
	"--resume requires a valid session ID",
}

// Parser turns Claude Code's stream-json output, fed a line at a time,
// into events and, at the end, a response. It does no I/O; a zero Parser
// is ready to use. It is not safe for concurrent use.
type Parser struct {
	Now     func() time.Time // the clock of event times; nil: time.Now
	Session string           // the session the run resumes, "" if none
	MaxText int              // Response.Text longer than this is cut; 0: no limit

	resp   modelcli.Response
	result *record // the result line, once seen
	other  []byte  // the start of any output that was not JSON
	cut    bool    // a line was cut before it reached the parser
}

// record is one line of stream-json, of any type; each type fills its own
// fields.
type record struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`

	Model          string `json:"model"`          // system/init
	PermissionMode string `json:"permissionMode"` // system/init
	Attempt        int    `json:"attempt"`        // system/api_retry
	MaxRetries     int    `json:"max_retries"`    // system/api_retry
	ErrorStatus    *int   `json:"error_status"`   // system/api_retry
	Error          any    `json:"error"`          // system/api_retry, assistant: the API error, if any
	Message        *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"` // assistant

	IsError           bool              `json:"is_error"` // result
	Result            string            `json:"result"`
	TotalCostUSD      float64           `json:"total_cost_usd"`
	Usage             *usage            `json:"usage"`
	PermissionDenials []denial          `json:"permission_denials"`
	Errors            []json.RawMessage `json:"errors"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

type denial struct {
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// block is one item of an assistant message's content.
type block struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
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
	if r.SessionID != "" && p.resp.Session == "" {
		p.resp.Session = r.SessionID
	}
	switch r.Type {
	case "system":
		switch r.Subtype {
		case "init":
			p.resp.Session = r.SessionID
			p.add(modelcli.Event{Time: t, Kind: modelcli.EventStarted, Text: r.SessionID, Data: data(line)})
		case "api_retry":
			text := fmt.Sprintf("[claude] API retry %d of %d", r.Attempt, r.MaxRetries)
			if r.ErrorStatus != nil {
				text += fmt.Sprintf(": HTTP %d", *r.ErrorStatus)
			}
			if s, ok := r.Error.(string); ok && s != "" {
				text += " " + s
			}
			p.add(modelcli.Event{Time: t, Kind: modelcli.EventProgress, Text: text, Data: data(line)})
		}
	case "assistant":
		// A message with an error is Claude Code's own, standing for a
		// failed API call: the result line reports it.
		if r.Message == nil || r.Error != nil {
			break
		}
		var blocks []block
		if json.Unmarshal(r.Message.Content, &blocks) != nil {
			break
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				if strings.TrimSpace(b.Text) != "" {
					p.add(modelcli.Event{Time: t, Kind: modelcli.EventProgress, Text: b.Text})
				}
			case "tool_use":
				p.add(modelcli.Event{Time: t, Kind: modelcli.EventToolCall, Tool: b.Name, Text: describe(b.Input), Data: data(b.Input)})
			}
		}
	case "result":
		p.result = &r
		if r.SessionID != "" {
			p.resp.Session = r.SessionID
		}
		p.resp.CostUSD = r.TotalCostUSD
		if r.Usage != nil {
			p.resp.Usage = modelcli.Usage{
				Input:      r.Usage.InputTokens,
				Output:     r.Usage.OutputTokens,
				CacheRead:  r.Usage.CacheReadInputTokens,
				CacheWrite: r.Usage.CacheCreationInputTokens,
			}
		}
		if q := question(r.PermissionDenials); q != nil {
			p.resp.Question = q
			p.add(modelcli.Event{Time: t, Kind: modelcli.EventNeedsInput, Text: q.Text})
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
// exited 0) and the tail of its standard error, it adds the last event
// (completed or error) and returns the response and the run's error.
func (p *Parser) Finish(runErr error, stderr []byte) (modelcli.Response, error) {
	resp := p.resp
	resp.Events = append([]modelcli.Event(nil), p.resp.Events...)
	resp.Truncated = p.cut
	err := p.outcome(runErr, stderr)
	if err == nil {
		resp.Text = strings.TrimSpace(p.result.Result)
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
		return runErr // stopped: timeout or ctx, whatever was printed
	}
	r := p.result
	if r == nil {
		if p.Session != "" && mentions(stderr, sessionGone) {
			return fmt.Errorf("claude: resume %s: %s: %w", p.Session, lastLine(stderr), modelcli.ErrSessionGone)
		}
		if runErr != nil {
			return runErr // names the program, with the last line of stderr
		}
		if len(p.other) > 0 {
			return fmt.Errorf("%w: %s", errNoResult, lastLine(p.other))
		}
		return errNoResult
	}
	if !r.IsError && (r.Subtype == "success" || r.Subtype == "") {
		return nil // even if it then exited non-zero: the answer is whole
	}
	msg := strings.TrimSpace(r.Result)
	if msg == "" {
		var parts []string
		for _, e := range r.Errors {
			var s string
			if json.Unmarshal(e, &s) != nil {
				s = string(e)
			}
			parts = append(parts, s)
		}
		msg = strings.Join(parts, "; ")
	}
	if p.Session != "" && (mentions([]byte(msg), sessionGone) || mentions(stderr, sessionGone)) {
		return fmt.Errorf("claude: resume %s: %s: %w", p.Session, msg, modelcli.ErrSessionGone)
	}
	switch {
	case msg == "" && runErr != nil:
		return fmt.Errorf("claude: %s: %w", r.Subtype, runErr)
	case msg == "":
		return fmt.Errorf("claude: %s", r.Subtype)
	case r.Subtype != "success" && r.Subtype != "":
		return fmt.Errorf("claude: %s: %s", r.Subtype, msg)
	}
	return fmt.Errorf("claude: %s", msg)
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

// question turns permission denials into a question, or nil if there
// were none.
func question(ds []denial) *modelcli.Question {
	var rules []string
	seen := map[string]bool{}
	for _, d := range ds {
		rule := d.ToolName
		if arg := describe(d.ToolInput); arg != "" {
			rule += "(" + clip(arg, 200) + ")"
		}
		if rule != "" && !seen[rule] {
			seen[rule] = true
			rules = append(rules, rule)
		}
	}
	if len(rules) == 0 {
		return nil
	}
	return &modelcli.Question{
		Text:    "Claude Code was denied permission for " + strings.Join(rules, ", ") + ". Allow (add to its allowed tools) or deny?",
		Options: []string{"allow", "deny"},
	}
}

// describeKeys are the tool-input fields that say best what a call does,
// best first.
var describeKeys = []string{"command", "file_path", "notebook_path", "path", "pattern", "url", "query", "prompt", "description"}

// describe returns a short account of a tool's input: its command, file,
// pattern or the like, else the input itself.
func describe(input json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
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
