package modelcli

import (
	"encoding/json"
	"time"
)

// Kinds of Event, normalised across CLIs.
const (
	EventStarted    = "started"     // the CLI began (session id known, if any)
	EventProgress   = "progress"    // text the model produced on the way
	EventToolCall   = "tool_call"   // the model called a tool
	EventNeedsInput = "needs_input" // the CLI stopped to ask a question or for permission
	EventInputSent  = "input_sent"  // an answer was sent back into the session
	EventError      = "error"       // the run failed (API error, turn limit, killed), or a stray line of output
	EventCompleted  = "completed"   // the run finished with a result
)

// Event is one timestamped step of a run, the same for every CLI.
type Event struct {
	Time time.Time       `json:"time"`
	Kind string          `json:"kind"`
	Text string          `json:"text,omitempty"` // progress text, the question, the error, the result
	Tool string          `json:"tool,omitempty"` // tool_call: the tool's name
	Data json.RawMessage `json:"data,omitempty"` // the CLI's own record, for the curious
	// Truncated marks an event whose Text is the start of a longer text:
	// a stray line (not JSON) cut to MaxStrayLine.
	Truncated bool `json:"truncated,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read,omitempty"`
	CacheWrite int64 `json:"cache_write,omitempty"`
	// Model is the model the tokens were spent on, when the CLI says (or
	// the adapter chose it), for pricing them (internal/agent/pricing).
	Model string `json:"model,omitempty"`
}

// Tokens is the count a token budget goes by: every input token (fresh,
// cached or written to the cache) and every output token.
func (u Usage) Tokens() int64 { return u.Input + u.CacheRead + u.CacheWrite + u.Output }

// Question is what a CLI asks when it needs input.
type Question struct {
	Text    string   `json:"text"`
	Options []string `json:"options,omitempty"`
	// Allow, when set, are the permission rules an answer that allows
	// (see [AllowOption]) grants: the caller passes them as
	// [Request.AllowTools] to the run that resumes the session. Claude
	// Code's are the tool rules it was denied.
	Allow []string `json:"allow,omitempty"`
}

// AllowOption is the option of a Question with Allow rules that grants
// them.
const AllowOption = "allow"
