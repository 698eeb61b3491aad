package modelcli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/collabdev/collab/internal/plumbing/proc"
)

// What the CLI adapters (claude, codex, gemini) share: running a CLI whose
// standard output is a JSON object a line, gathering its events into a
// response, and the small text helpers their parsers use.
//
// A line of standard output that is not a JSON object (a warning, a stack
// trace, a banner a CLI prints outside its protocol) is a stray line: it
// becomes an [EventError] carrying the line, cut to [MaxStrayLine] bytes
// and then marked Truncated, whether the run then succeeds or fails. The
// first [MaxStrayLines] do; the rest are counted in one more error event
// before the last. Blank lines are nothing.

// Bounds on what an adapter's event carries.
const (
	MaxEventText  = 4 << 10 // Event.Text is cut to this many bytes
	MaxEventData  = 4 << 10 // Event.Data: a larger record is left out
	MaxStrayLine  = 2 << 10 // a stray line's event carries at most this many bytes of it
	MaxStrayLines = 100     // stray lines that become events, each; the rest are counted
	maxOther      = 2 << 10 // output that was not JSON, kept for error messages
)

// LineParser is an adapter's parser: it turns a CLI's standard output, a
// line at a time, into events and, at the end, a response.
type LineParser interface {
	// Line parses one line (without its newline) and returns the events
	// it produced.
	Line(line []byte) []Event
	// Cut records that a line was cut short before it reached Line.
	Cut()
	// Finish ends the run, given how the process ended (nil: it exited
	// 0) and the tail of its standard error.
	Finish(runErr error, stderr []byte) (Response, error)
}

// RunLines runs spec for req: with req.Prompt on standard input, in
// req.Dir, within req.Timeout. It feeds each line of standard output to p
// as it arrives, and sends the events p makes of it to req.OnEvent (if
// set), then those p.Finish adds. A line proc cut at spec.MaxStdout bytes
// is reported to p.Cut first. The response is p's, with the tail of
// standard error and the run's duration. The Stdin, Dir, Timeout, Started
// and StdoutLine of spec are replaced.
func RunLines(ctx context.Context, req Request, spec proc.Spec, p LineParser) (Response, error) {
	spec.Stdin, spec.Dir, spec.Timeout, spec.Started = []byte(req.Prompt), req.Dir, req.Timeout, req.OnStart
	limit := spec.MaxStdout
	if limit <= 0 {
		limit = proc.DefaultMaxStdout
	}
	emit := func(evs []Event) {
		if req.OnEvent != nil {
			for _, e := range evs {
				req.OnEvent(e)
			}
		}
	}
	seen := 0 // events sent so far: all that Line returned
	spec.StdoutLine = func(line []byte) {
		if len(line) >= limit {
			p.Cut()
		}
		evs := p.Line(line)
		seen += len(evs)
		emit(evs)
	}
	res, runErr := proc.Run(ctx, spec)
	resp, err := p.Finish(runErr, res.StderrTail)
	emit(resp.Events[seen:])
	resp.Stderr = string(res.StderrTail)
	resp.Duration = res.Duration
	return resp, err
}

// ParseOutput parses a whole output with p, a line at a time, and
// finishes it as for a process that exited 0.
func ParseOutput(p LineParser, out []byte) (Response, error) {
	for line := range bytes.SplitSeq(out, []byte{'\n'}) {
		p.Line(line)
	}
	return p.Finish(nil, nil)
}

// Environ returns a child's whole environment: first defaults, then base
// (nil: os.Environ()), then each of more. A later setting of a variable
// wins, so base overrides the defaults.
func Environ(defaults, base []string, more ...[]string) []string {
	if base == nil {
		base = os.Environ()
	}
	env := append([]string(nil), defaults...)
	env = append(env, base...)
	for _, m := range more {
		env = append(env, m...)
	}
	return env
}

// Collector gathers what an adapter's parser makes of a run: the response
// so far with its events, whether a line was cut, and the start of any
// output that was not JSON, for error messages. A zero Collector is ready
// to use; it is not safe for concurrent use.
type Collector struct {
	Resp Response // the response so far; Add appends to its Events

	other  []byte
	cut    bool
	strays int // stray lines seen
}

// Decode trims line and, if it is a JSON object, unmarshals it into v and
// returns the trimmed line and true. A blank line returns false. Any other
// is a stray line: it is kept in part (see Other), becomes an error event
// (see the bounds above) at the time at returns, and Decode returns false.
// at is called only then, and just before the event is added: a parser
// that holds text back adds it there first, so events stay in order.
func (c *Collector) Decode(line []byte, v any, at func() time.Time) ([]byte, bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, false
	}
	if line[0] != '{' || json.Unmarshal(line, v) != nil {
		c.noteOther(line)
		c.stray(line, at)
		return nil, false
	}
	return line, true
}

// stray adds the error event of a stray line, or counts it past
// MaxStrayLines.
func (c *Collector) stray(line []byte, at func() time.Time) {
	c.strays++
	if c.strays > MaxStrayLines {
		return
	}
	t := time.Now()
	if at != nil {
		t = at()
	}
	text := strings.ToValidUTF8(string(line), "\uFFFD")
	c.Add(Event{Time: t, Kind: EventError, Text: Clip(text, MaxStrayLine), Truncated: len(text) > MaxStrayLine})
}

func (c *Collector) noteOther(line []byte) {
	if room := maxOther - len(c.other); room > 0 {
		if len(c.other) > 0 {
			c.other = append(c.other, '\n')
		}
		c.other = append(c.other, line[:min(len(line), room)]...)
	}
}

// Other returns the start of the output that was not JSON, a line per
// line, at most 2 KiB.
func (c *Collector) Other() []byte { return c.other }

// Add appends e to the events, its Text cut to MaxEventText.
func (c *Collector) Add(e Event) {
	e.Text = Clip(e.Text, MaxEventText)
	c.Resp.Events = append(c.Resp.Events, e)
}

// Cut records that a line was cut short: the response is then marked
// truncated.
func (c *Collector) Cut() { c.cut = true }

// Finish returns the response with its last event, at time t: on err, no
// text and an EventError; else text and an EventCompleted. Before it, the
// count of stray lines past MaxStrayLines, if any, is one more error
// event. The response is marked truncated if a line was cut or truncated
// is true. The Collector is left as it was.
func (c *Collector) Finish(t time.Time, text string, truncated bool, err error) (Response, error) {
	resp := c.Resp
	resp.Events = append([]Event(nil), c.Resp.Events...)
	if more := c.strays - MaxStrayLines; more > 0 {
		resp.Events = append(resp.Events, Event{Time: t, Kind: EventError, Text: fmt.Sprintf("… %d more lines not JSON", more)})
	}
	resp.Truncated = c.cut
	if err != nil {
		resp.Text = ""
		resp.Events = append(resp.Events, Event{Time: t, Kind: EventError, Text: Clip(err.Error(), MaxEventText)})
		return resp, err
	}
	resp.Text, resp.Truncated = text, resp.Truncated || truncated
	resp.Events = append(resp.Events, Event{Time: t, Kind: EventCompleted, Text: Clip(text, MaxEventText)})
	return resp, nil
}

// EventData returns a copy of a JSON record for Event.Data, or nil if it
// is not valid JSON or longer than MaxEventData.
func EventData(b []byte) json.RawMessage {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || len(b) > MaxEventData || !json.Valid(b) {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

// Describe returns a short account of a tool call's JSON input: the first
// of keys that is a non-empty string (its command, file, pattern or the
// like), else the input itself; "" if it is not an object or is empty.
// It is at most 500 bytes.
func Describe(input json.RawMessage, keys []string) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return Clip(s, 500)
		}
	}
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m)
	return Clip(string(b), 500)
}

// Clip cuts s to at most n bytes, on a rune boundary, marking the cut
// with "…" when there is room for it. Invalid UTF-8 becomes U+FFFD first.
func Clip(s string, n int) string {
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

// Mentions reports whether b contains any of needles.
func Mentions(b []byte, needles []string) bool {
	for _, n := range needles {
		if bytes.Contains(b, []byte(n)) {
			return true
		}
	}
	return false
}

// LastLine returns the last non-blank line of b, clipped to 500 bytes.
func LastLine(b []byte) string {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = bytes.TrimSpace(b[i+1:])
	}
	return Clip(string(b), 500)
}
