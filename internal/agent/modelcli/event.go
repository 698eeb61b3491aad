package modelcli

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode"
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

// Answer is a person's answer to a [Question] a live session asks
// mid-run ([Request.Ask]).
type Answer struct {
	Allow bool // the call may run
	// Always also allows calls like it for the rest of the session, by
	// the CLI's own rule for it (Claude Code's suggested permission
	// rules, Codex's approval for the session, an ACP allow_always
	// option). A CLI without such a rule allows this call only.
	Always bool
	// Text is the answer as given; a refusal passes it to the model as
	// the reason.
	Text string
}

// Options of a Question asked mid-run, in the order a person reads them.
const (
	AlwaysOption = "always"
	DenyOption   = "deny"
)

// MidRunOptions are the options of a Question asked mid-run.
var MidRunOptions = []string{AllowOption, AlwaysOption, DenyOption}

// allowWords are the first words of an answer that allow; alwaysWords
// those that allow for the session.
var (
	allowWords  = []string{AllowOption, "yes", "y"}
	alwaysWords = []string{AlwaysOption}
)

// ParseAnswer reads a person's answer: its first word, in any case and
// without trailing punctuation, decides. "allow", "yes" or "y" allows
// ("allow always" and "yes always" allow for the session), "always"
// allows for the session; anything else ("deny", "no", "not that one")
// refuses, with the whole text as the reason.
func ParseAnswer(text string) Answer {
	a := Answer{Text: text}
	words := strings.Fields(text)
	if len(words) == 0 {
		return a
	}
	word := func(i int, of []string) bool {
		if i >= len(words) {
			return false
		}
		w := strings.TrimRightFunc(words[i], unicode.IsPunct)
		return slices.ContainsFunc(of, func(o string) bool { return strings.EqualFold(w, o) })
	}
	switch {
	case word(0, alwaysWords):
		a.Allow, a.Always = true, true
	case word(0, allowWords):
		a.Allow, a.Always = true, word(1, alwaysWords)
	}
	return a
}
