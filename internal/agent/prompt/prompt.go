package prompt

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/collabdev/collab/channel"
)

// MaxSize is the largest prompt Render returns.
const MaxSize = 1 << 20

// NoReply is what a model prints when a message needs no answer: the
// watcher then posts nothing. Templates show it as {{.NoReply}}.
const NoReply = "NO_REPLY"

// Data is what a template renders: the dot of the template.
type Data struct {
	Agent   string // the agent that answers
	Channel string // the channel of Message
	Host    string // the host the watcher runs on
	Role    string // the role text; the caller reads --role FILE

	Memory     []Memory  // from LoadMemory
	Tasks      []Task    // the agent's claimed tasks in Channel, from LoadTasks
	Transcript []Message // messages before Message, oldest first
	Message    Message   // the message to answer

	MaxHops int       // the watcher's hop limit; 0: unknown or none
	Now     time.Time // when the prompt is built; zero: Render uses time.Now
}

// Message is a message as a prompt shows it: the channel.Message (its
// fields are the template's: .From, .Content.Text, .Time, …) and what the
// reader found of its sender.
type Message struct {
	channel.Message
	// Verdict is the check of its signature against the keyring, as
	// package signing names it: "verified", "unsigned", "unknown-key",
	// "bad-signature" or "revoked-key"; "" when it was not checked.
	Verdict string
	// Forged: it is not from whom it names (signing.Verifier.Forged: a
	// bad or revoked signature, or anything but verified in the name of
	// an agent with keys).
	Forged bool
	// LooksLike is the agent with keys whose name From passes for
	// (package lookalike: "Alice" for alice), "" if none.
	LooksLike string
}

// Sender returns how a prompt names m's sender to agent self: From and,
// in parentheses, "you" when self sent it, the verdict, and what is wrong
// with it: "alice (verified)", "bob (unsigned)", "codex (you, verified)",
// "alice (unsigned; FORGED)", "Alice (unsigned; NOT the keyed agent
// alice)". Without a verdict, and nothing wrong, it is From alone (or
// "codex (you)").
func (m Message) Sender(self string) string {
	var head, parts []string
	if m.From == self && !m.Forged {
		head = append(head, "you")
	}
	if m.Verdict != "" {
		head = append(head, m.Verdict)
	}
	if len(head) > 0 {
		parts = append(parts, strings.Join(head, ", "))
	}
	if m.Forged {
		parts = append(parts, "FORGED")
	}
	if m.LooksLike != "" {
		parts = append(parts, "NOT the keyed agent "+m.LooksLike)
	}
	if len(parts) == 0 {
		return m.From
	}
	return m.From + " (" + strings.Join(parts, "; ") + ")"
}

// NoReply returns NoReply, for templates.
func (Data) NoReply() string { return NoReply }

// Template is a parsed prompt template. It is safe for concurrent use.
type Template struct {
	name string
	text string
	t    *template.Template
}

//go:embed default.tmpl
var defaultText string

var defaultTemplate = sync.OnceValue(func() *Template {
	t, err := Parse("default", defaultText)
	if err != nil {
		panic(err) // a bug in default.tmpl; the tests catch it
	}
	return t
})

// Default returns the built-in template.
func Default() *Template { return defaultTemplate() }

// Load parses the template in the file at path; errors name it by path.
func Load(path string) (*Template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read prompt template: %w", err)
	}
	return Parse(path, string(data))
}

// Parse parses a text/template named name (used in error messages) and
// renders it once with sample data, so that a misspelt field or function
// is an error now rather than at the first message.
func Parse(name, text string) (*Template, error) {
	t, err := template.New(name).Funcs(funcs).Parse(text)
	if err != nil {
		return nil, tmplError(name, err)
	}
	tp := &Template{name: name, text: text, t: t}
	if _, err := tp.Render(sample()); err != nil {
		return nil, err
	}
	return tp, nil
}

// Name returns the template's name: "default", or the path given to Load.
func (t *Template) Name() string { return t.name }

// Text returns the template's source.
func (t *Template) Text() string { return t.text }

// Render executes the template with d. The result is valid UTF-8 without
// NUL bytes, not blank, and at most MaxSize bytes; anything else is an
// error, as is a failure of the template (its message names the line).
func (t *Template) Render(d Data) (out string, err error) {
	if d.Now.IsZero() {
		d.Now = time.Now()
	}
	d.Message.Message = headers(d.Message.Message)
	d.Message.LooksLike = oneLine(d.Message.LooksLike)
	if len(d.Transcript) > 0 {
		tr := make([]Message, len(d.Transcript))
		for i, m := range d.Transcript {
			m.Message, m.LooksLike = headers(m.Message), oneLine(m.LooksLike)
			tr[i] = m
		}
		d.Transcript = tr
	}
	defer func() {
		// text/template turns panics in functions and methods into
		// errors; this is for anything left. A template must not take
		// the watcher down.
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("prompt: template %s: panic: %v", t.name, r)
		}
	}()
	w := &capWriter{max: MaxSize}
	// A pointer, so that methods with pointer receivers such as
	// (*channel.Message).Time can be called on .Message.
	if err := t.t.Execute(w, &d); err != nil {
		if errors.Is(err, errTooLarge) {
			return "", fmt.Errorf("prompt: template %s renders more than %d bytes", t.name, MaxSize)
		}
		return "", tmplError(t.name, err)
	}
	out = strings.ToValidUTF8(w.buf.String(), "\uFFFD")
	out = strings.ReplaceAll(out, "\x00", "")
	if strings.TrimSpace(out) == "" {
		return "", fmt.Errorf("prompt: template %s renders an empty prompt", t.name)
	}
	return out, nil
}

// maxHeader is the longest a message's one-line field gets in a prompt.
const maxHeader = 200

// headers returns m with its one-line fields made single lines of at most
// maxHeader bytes: a foreign writer's "from" must not add lines to the
// prompt's framing.
func headers(m channel.Message) channel.Message {
	for _, f := range []*string{&m.ID, &m.From, &m.To, &m.Type, &m.Metadata.InReplyTo, &m.Metadata.Thread} {
		*f = oneLine(*f)
	}
	return m
}

func oneLine(s string) string {
	if len(s) > maxHeader {
		s = cutUTF8(s, maxHeader-len("…")) + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 {
			return ' '
		}
		return r
	}, s)
}

// templateError is a text/template error, reworded: "template: x:3: …"
// becomes "prompt: template x:3: …".
type templateError struct {
	msg string
	err error
}

func (e *templateError) Error() string { return e.msg }
func (e *templateError) Unwrap() error { return e.err }

func tmplError(name string, err error) error {
	msg, ok := strings.CutPrefix(err.Error(), "template: ")
	if !ok {
		msg = name + ": " + msg
	}
	return &templateError{msg: "prompt: template " + msg, err: err}
}

var errTooLarge = errors.New("prompt: too large")

// capWriter collects output up to max bytes and fails beyond, which stops
// a runaway template early.
type capWriter struct {
	buf strings.Builder
	max int
}

func (w *capWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.max {
		return 0, errTooLarge
	}
	return w.buf.Write(p)
}

// sample is the data Parse renders a new template with: every field set,
// so that every field a template names is looked up.
func sample() Data {
	code := "func main() {}\n"
	at := time.Date(2026, 1, 11, 16, 33, 15, 0, time.UTC)
	msg := func(id, from, to, text string, code *string, hops int) Message {
		return Message{Message: channel.Message{
			ID: id, Timestamp: at.Format(channel.TimeFormat), SessionID: "sample",
			From: from, To: to, Type: "chat",
			Content:  channel.Content{Text: text, Code: code},
			Metadata: channel.Metadata{Mode: channel.ModeChat, Turn: from, Hops: hops, InReplyTo: "msg-20260111-163000-alice-0001", Thread: "msg-20260111-163000-alice-0001", Host: "h"},
			File:     id + ".json",
		}, Verdict: "verified", Forged: true, LooksLike: "alice"}
	}
	return Data{
		Agent: "codex", Channel: "sample", Host: "h", Role: "A reviewer.",
		Memory: []Memory{
			{Path: "STATE.md", Text: "state", Size: 9, Truncated: true},
			{Path: "missing.md", Err: os.ErrNotExist},
		},
		Transcript: []Message{
			msg("msg-20260111-163000-alice-0001", "alice", "all", "hello", nil, 0),
			msg("msg-20260111-163010-codex-0002", "codex", "alice", "hi", &code, 1),
		},
		Tasks: []Task{
			{ID: "t3", Title: "review the parser", Checkpoint: "half done", Type: "progress", Time: at, Files: "parser.go"},
			{ID: "t4", Title: "fuzz it"},
		},
		Message: msg("msg-20260111-163315-claude-0003", "claude", "codex", "@codex review?", &code, 2),
		MaxHops: 6,
		Now:     at,
	}
}
