package claude

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/proc"
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

	c      modelcli.Collector
	result *record // the result line, once seen
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
func (p *Parser) Cut() { p.c.Cut() }

// Events returns how many events the parser has produced so far.
func (p *Parser) Events() int { return len(p.c.Resp.Events) }

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
	if r.SessionID != "" && p.c.Resp.Session == "" {
		p.c.Resp.Session = r.SessionID
	}
	switch r.Type {
	case "system":
		switch r.Subtype {
		case "init":
			p.c.Resp.Session = r.SessionID
			p.c.Add(modelcli.Event{Time: t, Kind: modelcli.EventStarted, Text: r.SessionID, Data: modelcli.EventData(line)})
		case "api_retry":
			text := fmt.Sprintf("[claude] API retry %d of %d", r.Attempt, r.MaxRetries)
			if r.ErrorStatus != nil {
				text += fmt.Sprintf(": HTTP %d", *r.ErrorStatus)
			}
			if s, ok := r.Error.(string); ok && s != "" {
				text += " " + s
			}
			p.c.Add(modelcli.Event{Time: t, Kind: modelcli.EventProgress, Text: text, Data: modelcli.EventData(line)})
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
					p.c.Add(modelcli.Event{Time: t, Kind: modelcli.EventProgress, Text: b.Text})
				}
			case "tool_use":
				p.c.Add(modelcli.Event{Time: t, Kind: modelcli.EventToolCall, Tool: b.Name, Text: modelcli.Describe(b.Input, describeKeys), Data: modelcli.EventData(b.Input)})
			}
		}
	case "result":
		p.result = &r
		if r.SessionID != "" {
			p.c.Resp.Session = r.SessionID
		}
		p.c.Resp.CostUSD = r.TotalCostUSD
		if r.Usage != nil {
			p.c.Resp.Usage = modelcli.Usage{
				Input:      r.Usage.InputTokens,
				Output:     r.Usage.OutputTokens,
				CacheRead:  r.Usage.CacheReadInputTokens,
				CacheWrite: r.Usage.CacheCreationInputTokens,
			}
		}
		if q := question(r.PermissionDenials); q != nil {
			p.c.Resp.Question = q
			p.c.Add(modelcli.Event{Time: t, Kind: modelcli.EventNeedsInput, Text: q.Text})
		}
	}
	return p.c.Resp.Events[n:]
}

// Finish ends the run: given how the process ended (runErr, nil if it
// exited 0) and the tail of its standard error, it adds the last event
// (completed or error) and returns the response and the run's error.
func (p *Parser) Finish(runErr error, stderr []byte) (modelcli.Response, error) {
	err := p.outcome(runErr, stderr)
	var text string
	var cut bool
	if err == nil {
		text = strings.TrimSpace(p.result.Result)
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
		return runErr // stopped: timeout or ctx, whatever was printed
	}
	r := p.result
	if r == nil {
		if p.Session != "" && modelcli.Mentions(stderr, sessionGone) {
			return fmt.Errorf("claude: resume %s: %s: %w", p.Session, modelcli.LastLine(stderr), modelcli.ErrSessionGone)
		}
		if runErr != nil {
			return runErr // names the program, with the last line of stderr
		}
		if len(p.c.Other()) > 0 {
			return fmt.Errorf("%w: %s", errNoResult, modelcli.LastLine(p.c.Other()))
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
	if p.Session != "" && (modelcli.Mentions([]byte(msg), sessionGone) || modelcli.Mentions(stderr, sessionGone)) {
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
	return modelcli.ParseOutput(&Parser{}, out)
}

// question turns permission denials into a question, or nil if there
// were none.
func question(ds []denial) *modelcli.Question {
	var calls, rules []string
	for _, d := range ds {
		call := d.ToolName
		if arg := modelcli.Describe(d.ToolInput, describeKeys); arg != "" {
			call += "(" + modelcli.Clip(arg, 200) + ")"
		}
		if call != "" && !slices.Contains(calls, call) {
			calls = append(calls, call)
		}
		if r := rule(d); r != "" && !slices.Contains(rules, r) {
			rules = append(rules, r)
		}
	}
	if len(calls) == 0 {
		return nil
	}
	return &modelcli.Question{
		Text:    "Claude Code was denied permission for " + strings.Join(calls, ", ") + ". Allow (for the run that resumes the session) or deny?",
		Options: []string{modelcli.AllowOption, "deny"},
		Allow:   rules,
	}
}

// editTools are the tools that Edit rules cover (a Write rule with a path
// does not match a Write call: Claude Code 2.1).
var editTools = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}

// rule returns the permission rule that allows the denied call d and as
// little else as Claude Code's rules can say (see the package
// documentation), or "" for a denial without a usable tool name or
// without the argument its rule needs.
func rule(d denial) string {
	tool := d.ToolName
	if tool == "" || strings.ContainsAny(tool, "() ") {
		return ""
	}
	var in map[string]any
	json.Unmarshal(d.ToolInput, &in) // not an object: the tool's name alone
	str := func(k string) string { s, _ := in[k].(string); return s }
	// A call of a tool with an argument rule whose argument is missing
	// gets no rule: the tool's bare name would allow every call of it.
	switch {
	case tool == "Bash":
		if c := str("command"); c != "" {
			return "Bash(" + c + ")"
		}
		return ""
	case tool == "Read" || slices.Contains(editTools, tool):
		p := cmp.Or(str("file_path"), str("notebook_path"))
		if p == "" {
			return ""
		}
		if strings.HasPrefix(p, "/") {
			p = "/" + p // "//abs": from the root, not the project
		}
		if tool != "Read" {
			tool = "Edit"
		}
		return tool + "(" + p + ")"
	case tool == "WebFetch":
		if u, err := url.Parse(str("url")); err == nil && u.Hostname() != "" {
			return "WebFetch(domain:" + u.Hostname() + ")"
		}
		return ""
	}
	return tool
}

// describeKeys are the tool-input fields that say best what a call does,
// best first (see modelcli.Describe).
var describeKeys = []string{"command", "file_path", "notebook_path", "path", "pattern", "url", "query", "prompt", "description"}
