package live

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/plumbing/jsonrpc"
)

// geminiTurn gathers one turn's session/update notifications into the
// events and response of the per-message Gemini adapter
// (modelcli/gemini): agent text chunks joined into one progress event
// per stretch of text, a tool call an EventToolCall, the reply the text
// after the last tool call. It does no I/O.
type geminiTurn struct {
	maxText int

	c        modelcli.Collector
	chunk    strings.Builder // text not yet sent as progress
	chunkAt  time.Time
	reply    strings.Builder // text since the last tool call
	replyCut bool
}

// acpUpdate is a session/update's update, of any kind.
type acpUpdate struct {
	SessionUpdate string          `json:"sessionUpdate"`
	Content       json.RawMessage `json:"content"`    // agent_message_chunk: {type, text}; tool_call: a list
	ToolCallID    string          `json:"toolCallId"` // tool_call
	Title         string          `json:"title"`
	Kind          string          `json:"kind"`
	Status        string          `json:"status"`
	RawInput      json.RawMessage `json:"rawInput"`
	Entries       []struct {
		Content string `json:"content"`
		Status  string `json:"status"`
	} `json:"entries"` // plan
}

// acpPermission is a session/request_permission's parameters.
type acpPermission struct {
	SessionID string `json:"sessionId"`
	ToolCall  struct {
		ToolCallID string `json:"toolCallId"`
		Title      string `json:"title"`
		Kind       string `json:"kind"`
	} `json:"toolCall"`
	Options []struct {
		OptionID string `json:"optionId"`
		Name     string `json:"name"`
		Kind     string `json:"kind"`
	} `json:"options"`
}

// flush sends the text gathered so far as one progress event.
func (g *geminiTurn) flush() {
	if strings.TrimSpace(g.chunk.String()) != "" {
		g.c.Add(modelcli.Event{Time: g.chunkAt, Kind: modelcli.EventProgress, Text: g.chunk.String()})
	}
	g.chunk.Reset()
}

// add adds an event, after the text gathered before it.
func (g *geminiTurn) add(e modelcli.Event) {
	g.flush()
	g.c.Add(e)
}

// update takes one session/update's params.
func (g *geminiTurn) update(params json.RawMessage, t time.Time) {
	var p struct {
		Update acpUpdate `json:"update"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	u := p.Update
	switch u.SessionUpdate {
	case "agent_message_chunk":
		var c struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(u.Content, &c) != nil || c.Type != "text" {
			return
		}
		if g.chunk.Len() < modelcli.MaxEventText {
			g.chunk.WriteString(c.Text)
		}
		g.chunkAt = t
		text := c.Text
		if room := g.limit() - g.reply.Len(); len(text) > room {
			text, g.replyCut = text[:max(room, 0)], true
		}
		g.reply.WriteString(text)
	case "tool_call":
		g.reply.Reset()
		g.replyCut = false
		g.add(modelcli.Event{Time: t, Kind: modelcli.EventToolCall, Tool: toolName(u.ToolCallID, u.Kind), Text: u.Title, Data: modelcli.EventData(u.RawInput)})
	case "tool_call_update":
		if u.Status == "completed" || u.Status == "failed" {
			g.reply.Reset()
			g.replyCut = false
		}
	case "plan":
		var b strings.Builder
		for _, e := range u.Entries {
			fmt.Fprintf(&b, "[%s] %s\n", e.Status, e.Content)
		}
		g.add(modelcli.Event{Time: t, Kind: modelcli.EventProgress, Text: "plan:\n" + b.String()})
	}
}

// refused records a permission request answered no.
func (g *geminiTurn) refused(p acpPermission, t time.Time) {
	g.add(modelcli.Event{Time: t, Kind: modelcli.EventProgress,
		Text: fmt.Sprintf("[gemini] permission refused: %s (%s): its approval mode does not allow it without asking", p.ToolCall.Title, toolName(p.ToolCall.ToolCallID, p.ToolCall.Kind))})
}

// toolName is the tool of a call, from its id: Gemini CLI's are the
// tool's name, "__" and the model's id; or (when the model gave none) the
// name, "-", the time and a counter. Else it is the ACP kind of the tool
// (read, edit, execute, …).
func toolName(callID, kind string) string {
	if i := strings.LastIndex(callID, "__"); i > 0 {
		return callID[:i]
	}
	if i := strings.Index(callID, "-"); i > 0 {
		return callID[:i]
	}
	return kind
}

func (g *geminiTurn) limit() int {
	if g.maxText > 0 {
		return g.maxText
	}
	return 8 << 20
}

// acpPromptResult is session/prompt's result.
type acpPromptResult struct {
	StopReason string `json:"stopReason"`
	Meta       struct {
		Quota struct {
			TokenCount struct {
				Input  int64 `json:"input_tokens"`
				Output int64 `json:"output_tokens"`
			} `json:"token_count"`
			ModelUsage []struct {
				Model string `json:"model"`
			} `json:"model_usage"`
		} `json:"quota"`
	} `json:"_meta"`
}

// errStopped is the error of a turn the agent reports "cancelled" with
// no context ended (the caller maps it to the context's cause).
var errStopped = errors.New("gemini live: the turn was cancelled")

// finish ends the turn with session/prompt's response (runErr set when
// there is none: the process died, or the call failed).
func (g *geminiTurn) finish(resp *jsonrpc.Msg, runErr error) (modelcli.Response, error) {
	g.flush()
	err := runErr
	if err == nil {
		var r acpPromptResult
		if err = result(*resp, &r); err != nil {
			err = fmt.Errorf("gemini live: %w", err)
		} else {
			tc := r.Meta.Quota.TokenCount
			g.c.Resp.Usage = modelcli.Usage{Input: tc.Input, Output: tc.Output}
			if mu := r.Meta.Quota.ModelUsage; len(mu) > 0 {
				g.c.Resp.Usage.Model = mu[0].Model
			}
			switch r.StopReason {
			case "end_turn":
			case "cancelled":
				err = errStopped
			default:
				err = fmt.Errorf("gemini live: the turn ended: %s", r.StopReason)
			}
		}
	}
	var text string
	if err == nil {
		text = strings.TrimSpace(g.reply.String())
		if text == "" {
			err = modelcli.ErrEmpty
		} else if g.replyCut {
			text = modelcli.Clip(text+"…", g.limit())
		}
	}
	return g.c.Finish(time.Now(), text, g.replyCut, err)
}
