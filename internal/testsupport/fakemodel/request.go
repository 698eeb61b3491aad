package fakemodel

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// API names the wire protocol of a request.
type API string

// The three protocols the server speaks.
const (
	Anthropic API = "anthropic" // POST /v1/messages (Claude Code)
	OpenAI    API = "openai"    // POST /v1/responses (Codex CLI)
	Gemini    API = "gemini"    // POST /v1beta/models/M:streamGenerateContent (Gemini CLI)
)

// Kinds of Part.
const (
	PartText       = "text"
	PartToolCall   = "tool_call"
	PartToolResult = "tool_result"
	PartOther      = "other" // thinking, reasoning, images, …
)

// Request is one HTTP request the server received, decoded where it was a
// model call. Secrets (API keys in headers or the query) are redacted.
type Request struct {
	Seq    int    // 1-based order of arrival among all requests
	API    API    // "" when the path is none of the model APIs
	Method string // GET, HEAD, POST
	Path   string // without the query
	Query  string // raw query, key= redacted
	Header http.Header
	Body   []byte // as received (decompressed)

	// Arrived is when the request reached the handler. Ended, set on a
	// model call (Turn), is when the server had written its whole answer
	// (an error reply's too); it is zero until then, and for an answer
	// cut short. Ended minus Arrived is the model's own time.
	Arrived, Ended time.Time
	// Over is when the server was done with the call: its answer written
	// whole (Ended), cut short, or the client gone; zero while it runs.
	Over time.Time

	// Turn is set on a model call that was answered from the script (a
	// generation request); probes, count-tokens and the like are not turns.
	Turn bool

	Model    string
	Stream   bool
	System   string    // the system prompt (instructions), parts joined by "\n"
	Messages []Message // the conversation as sent, oldest first
	Tools    []string  // names of the tools offered to the model
	// Namespaces holds the tools offered in a group (OpenAI Responses
	// namespaces, such as Codex's "mcp__SERVER"): group name to its tools'
	// names, which are in Tools too.
	Namespaces map[string][]string
}

// Message is one entry of a conversation, normalised across the APIs.
type Message struct {
	// Role is "user", "assistant", "system" (OpenAI developer/system
	// messages) or "tool" (an OpenAI function_call_output item).
	Role  string
	Parts []Part
}

// Part is one piece of a message.
type Part struct {
	Kind    string          // PartText, PartToolCall, PartToolResult or PartOther
	Text    string          // the text, or a tool result's output
	Tool    string          // the tool's name (calls; Gemini results too)
	Args    json.RawMessage // a call's arguments, as JSON
	ID      string          // the id tying a call to its result, if the API has one
	IsError bool            // a tool result the CLI marked as failed
}

// Text returns the message's text parts, joined by newlines.
func (m Message) Text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Kind != PartText {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// Prompt returns the last text a user wrote: the text parts of the last
// user message that holds any, leaving out the context blocks CLIs add
// (a part that is one XML-like element such as <system-reminder>…</system-reminder>
// or <environment_context>…</environment_context>). It is "" when there is none.
func (r Request) Prompt() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != "user" {
			continue
		}
		var texts []string
		for _, p := range m.Parts {
			if p.Kind == PartText && !isContextBlock(p.Text) {
				texts = append(texts, p.Text)
			}
		}
		if len(texts) > 0 {
			return strings.Join(texts, "\n")
		}
	}
	return ""
}

// ToolResult returns the last tool result when the conversation ends with
// tool results (the request is the follow-up to a tool call).
func (r Request) ToolResult() (Part, bool) {
	if len(r.Messages) == 0 {
		return Part{}, false
	}
	last := r.Messages[len(r.Messages)-1]
	for i := len(last.Parts) - 1; i >= 0; i-- {
		if last.Parts[i].Kind == PartToolResult {
			return last.Parts[i], true
		}
	}
	return Part{}, false
}

// ToolCalls returns every tool call in the conversation, oldest first.
func (r Request) ToolCalls() []Part {
	var calls []Part
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			if p.Kind == PartToolCall {
				calls = append(calls, p)
			}
		}
	}
	return calls
}

// Transcript returns the conversation as text, one "role: text" line per
// text part ("role: call NAME ARGS" and "role: result TEXT" for tools), for
// assertions such as "the resumed turn sent the earlier answer".
func (r Request) Transcript() string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			switch p.Kind {
			case PartText:
				b.WriteString(m.Role + ": " + p.Text + "\n")
			case PartToolCall:
				b.WriteString(m.Role + ": call " + p.Tool + " " + string(p.Args) + "\n")
			case PartToolResult:
				b.WriteString(m.Role + ": result " + p.Text + "\n")
			}
		}
	}
	return b.String()
}

// HasTool reports whether the request offered a tool of that name.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// isContextBlock reports whether s is one element <tag …>…</tag>, the way
// CLIs wrap the context they add to a user turn.
func isContextBlock(s string) bool {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "<") || !strings.HasSuffix(s, ">") {
		return false
	}
	end := strings.IndexAny(s, " >\n")
	if end < 2 {
		return false
	}
	tag := s[1:end]
	return strings.HasSuffix(s, "</"+tag+">")
}

// secretHeaders are replaced by "[redacted]" in recorded requests.
var secretHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key", "Cookie"}

func redactHeader(h http.Header) http.Header {
	h = h.Clone()
	for _, k := range secretHeaders {
		if _, ok := h[k]; ok {
			h.Set(k, "[redacted]")
		}
	}
	return h
}

func redactQuery(raw string) string {
	q, err := url.ParseQuery(raw)
	if err != nil || !q.Has("key") {
		return raw
	}
	q.Set("key", "[redacted]")
	return q.Encode()
}

// decodeAnthropic fills r from a Messages API body.
func decodeAnthropic(r *Request) error {
	var body struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return err
	}
	r.Model, r.Stream = body.Model, body.Stream
	for _, b := range anthropicBlocks(body.System) {
		if b.Kind == PartText {
			r.System = joinLine(r.System, b.Text)
		}
	}
	for _, m := range body.Messages {
		r.Messages = append(r.Messages, Message{Role: m.Role, Parts: anthropicBlocks(m.Content)})
	}
	for _, t := range body.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	return nil
}

// anthropicBlocks decodes a content field: a string or a list of blocks.
func anthropicBlocks(raw json.RawMessage) []Part {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Part{{Kind: PartText, Text: s}}
	}
	var blocks []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return []Part{{Kind: PartOther, Text: string(raw)}}
	}
	var parts []Part
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, Part{Kind: PartText, Text: b.Text})
		case "tool_use":
			parts = append(parts, Part{Kind: PartToolCall, Tool: b.Name, Args: b.Input, ID: b.ID})
		case "tool_result":
			var text string
			for _, c := range anthropicBlocks(b.Content) {
				text = joinLine(text, c.Text)
			}
			parts = append(parts, Part{Kind: PartToolResult, Text: text, ID: b.ToolUseID, IsError: b.IsError})
		default:
			parts = append(parts, Part{Kind: PartOther, Text: b.Type})
		}
	}
	return parts
}

// decodeOpenAI fills r from a Responses API body.
func decodeOpenAI(r *Request) error {
	var body struct {
		Model        string          `json:"model"`
		Stream       bool            `json:"stream"`
		Instructions string          `json:"instructions"`
		Input        json.RawMessage `json:"input"`
		Tools        []openaiTool    `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return err
	}
	r.Model, r.Stream, r.System = body.Model, body.Stream, body.Instructions
	for _, t := range body.Tools {
		r.addTool(t)
	}
	var s string
	if json.Unmarshal(body.Input, &s) == nil {
		r.Messages = []Message{{Role: "user", Parts: []Part{{Kind: PartText, Text: s}}}}
		return nil
	}
	var items []struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"` // a string, or an object (tool_search_call)
		Input     string          `json:"input"`
		CallID    string          `json:"call_id"`
		Output    json.RawMessage `json:"output"`
		Tools     []openaiTool    `json:"tools"` // tool_search_output
	}
	if len(body.Input) > 0 {
		if err := json.Unmarshal(body.Input, &items); err != nil {
			return err
		}
	}
	for _, it := range items {
		switch it.Type {
		case "message", "":
			role := it.Role
			if role == "developer" {
				role = "system"
			}
			r.Messages = append(r.Messages, Message{Role: role, Parts: openaiContent(it.Content)})
		case "function_call":
			var args string
			_ = json.Unmarshal(it.Arguments, &args)
			r.Messages = append(r.Messages, Message{Role: "assistant", Parts: []Part{{
				Kind: PartToolCall, Tool: it.Name, Args: json.RawMessage(args), ID: it.CallID,
			}}})
		case "tool_search_call":
			r.Messages = append(r.Messages, Message{Role: "assistant", Parts: []Part{{
				Kind: PartToolCall, Tool: "tool_search", Args: it.Arguments, ID: it.CallID,
			}}})
		case "tool_search_output":
			// The tools found are offered from now on.
			var found []string
			for _, t := range it.Tools {
				r.addTool(t)
				found = append(found, t.names()...)
			}
			r.Messages = append(r.Messages, Message{Role: "tool", Parts: []Part{{
				Kind: PartToolResult, Text: strings.Join(found, "\n"), ID: it.CallID,
			}}})
		case "custom_tool_call":
			args, _ := json.Marshal(it.Input)
			r.Messages = append(r.Messages, Message{Role: "assistant", Parts: []Part{{
				Kind: PartToolCall, Tool: it.Name, Args: args, ID: it.CallID,
			}}})
		case "function_call_output", "custom_tool_call_output":
			r.Messages = append(r.Messages, Message{Role: "tool", Parts: []Part{{
				Kind: PartToolResult, Text: openaiOutput(it.Output), ID: it.CallID,
			}}})
		default:
			r.Messages = append(r.Messages, Message{Role: "assistant", Parts: []Part{{Kind: PartOther, Text: it.Type}}})
		}
	}
	return nil
}

// openaiTool is a tool offered in the Responses API: a function, a
// built-in tool (web_search, local_shell, …) known by its type, or a
// namespace grouping tools.
type openaiTool struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// names returns t's name, or for a namespace its tools' as NAMESPACE.TOOL.
func (t openaiTool) names() []string {
	if len(t.Tools) == 0 {
		return []string{cmp.Or(t.Name, t.Type)}
	}
	var out []string
	for _, sub := range t.Tools {
		out = append(out, t.Name+"."+sub.Name)
	}
	return out
}

// addTool records t as offered.
func (r *Request) addTool(t openaiTool) {
	switch {
	case len(t.Tools) > 0: // a namespace: its tools
		if r.Namespaces == nil {
			r.Namespaces = map[string][]string{}
		}
		for _, sub := range t.Tools {
			r.Tools = append(r.Tools, sub.Name)
			r.Namespaces[t.Name] = append(r.Namespaces[t.Name], sub.Name)
		}
	case t.Name != "":
		r.Tools = append(r.Tools, t.Name)
	case t.Type != "":
		r.Tools = append(r.Tools, t.Type)
	}
}

func openaiContent(raw json.RawMessage) []Part {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Part{{Kind: PartText, Text: s}}
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var parts []Part
	for _, b := range blocks {
		switch b.Type {
		case "input_text", "output_text", "text":
			parts = append(parts, Part{Kind: PartText, Text: b.Text})
		default:
			parts = append(parts, Part{Kind: PartOther, Text: b.Type})
		}
	}
	return parts
}

// openaiOutput decodes a function_call_output's output: a string, or a list
// of content items.
func openaiOutput(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var text string
	for _, p := range openaiContent(raw) {
		text = joinLine(text, p.Text)
	}
	return text
}

// decodeGemini fills r from a generateContent body; model comes from the path.
func decodeGemini(r *Request, model string) error {
	type part struct {
		Text         string `json:"text"`
		Thought      bool   `json:"thought"`
		FunctionCall *struct {
			ID   string          `json:"id"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"functionCall"`
		FunctionResponse *struct {
			ID       string          `json:"id"`
			Name     string          `json:"name"`
			Response json.RawMessage `json:"response"`
		} `json:"functionResponse"`
	}
	var body struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []part `json:"parts"`
		} `json:"contents"`
		SystemInstruction *struct {
			Parts []part `json:"parts"`
		} `json:"systemInstruction"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return err
	}
	r.Model = model
	if body.SystemInstruction != nil {
		for _, p := range body.SystemInstruction.Parts {
			r.System = joinLine(r.System, p.Text)
		}
	}
	for _, t := range body.Tools {
		for _, f := range t.FunctionDeclarations {
			r.Tools = append(r.Tools, f.Name)
		}
	}
	for _, c := range body.Contents {
		role := c.Role
		if role == "model" {
			role = "assistant"
		}
		m := Message{Role: role}
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				m.Parts = append(m.Parts, Part{Kind: PartToolCall, Tool: p.FunctionCall.Name, Args: p.FunctionCall.Args, ID: p.FunctionCall.ID})
			case p.FunctionResponse != nil:
				m.Parts = append(m.Parts, Part{Kind: PartToolResult, Tool: p.FunctionResponse.Name,
					Text: geminiOutput(p.FunctionResponse.Response), ID: p.FunctionResponse.ID})
			case p.Thought:
				m.Parts = append(m.Parts, Part{Kind: PartOther, Text: "thought"})
			default:
				m.Parts = append(m.Parts, Part{Kind: PartText, Text: p.Text})
			}
		}
		r.Messages = append(r.Messages, m)
	}
	return nil
}

// geminiOutput takes the text out of a functionResponse.response, which
// Gemini CLI sends as {"output": "…"} (or {"error": "…"}).
func geminiOutput(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"output", "error", "content"} {
			var s string
			if json.Unmarshal(m[k], &s) == nil && s != "" {
				return s
			}
		}
	}
	return string(raw)
}

func joinLine(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "\n" + b
}
