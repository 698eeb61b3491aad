package live

import (
	"encoding/json"
	"strings"
	"unicode"

	"github.com/collabdev/collab/internal/plumbing/jsonrpc"
)

// Codex's app-server (codex app-server) speaks JSON-RPC 2.0, one message
// a line, without the "jsonrpc" member (the codec is acp.go's, which
// takes a message with or without it). The client sends initialize, the
// initialized notification, then thread/start (or thread/resume with the
// thread id), and a turn/start request per turn; the server answers each
// request, and sends notifications (item/started, item/completed,
// thread/tokenUsage/updated, error, turn/completed, …) and requests of
// its own (approvals), which the client answers. The shapes are those of
// `codex app-server generate-ts` for the pinned version.

// The notifications a turn reads; the rest are dropped as they arrive.
var turnNotes = map[string]bool{
	"turn/started": true, "turn/completed": true, "item/started": true, "item/completed": true,
	"thread/tokenUsage/updated": true, "error": true,
}

// The notifications the client opts out of (initialize's
// optOutNotificationMethods): the deltas of text and output, which the
// completed items repeat.
var quietNotes = []string{
	"item/agentMessage/delta", "item/plan/delta", "item/reasoning/summaryTextDelta",
	"item/reasoning/summaryPartAdded", "item/reasoning/textDelta", "item/commandExecution/outputDelta",
	"item/fileChange/outputDelta", "command/exec/outputDelta", "process/outputDelta",
	"rawResponseItem/completed", "rawResponse/completed",
}

// appNote is the part of a turn's notification this package reads.
type appNote struct {
	ThreadID   string          `json:"threadId"`
	TurnID     string          `json:"turnId"`
	Item       json.RawMessage `json:"item"` // item/*
	Turn       *appTurn        `json:"turn"` // turn/*
	TokenUsage *struct {       // thread/tokenUsage/updated
		Total tokenUsage `json:"total"`
	} `json:"tokenUsage"`
	Error *struct { // error
		Message string `json:"message"`
	} `json:"error"`
	WillRetry bool `json:"willRetry"`
}

// appTurn is a turn, as much as this package reads.
type appTurn struct {
	ID     string `json:"id"`
	Status string `json:"status"` // completed, interrupted, failed, inProgress
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// tokenUsage is the app-server's count of a thread's tokens.
type tokenUsage struct {
	Input      int64 `json:"inputTokens"`
	CachedIn   int64 `json:"cachedInputTokens"`
	CacheWrite int64 `json:"cacheWriteInputTokens"`
	Output     int64 `json:"outputTokens"`
}

func (u tokenUsage) minus(v tokenUsage) tokenUsage {
	return tokenUsage{max(u.Input-v.Input, 0), max(u.CachedIn-v.CachedIn, 0),
		max(u.CacheWrite-v.CacheWrite, 0), max(u.Output-v.Output, 0)}
}

// turnID is the turn a notification belongs to, "" if it does not say.
func (n appNote) turnID() string {
	if n.TurnID != "" {
		return n.TurnID
	}
	if n.Turn != nil {
		return n.Turn.ID
	}
	return ""
}

// appItem is a thread item, as much of it as codex exec --json's items
// carry.
type appItem struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Text    string `json:"text"`
	Command string `json:"command"`
	Changes []struct {
		Path string `json:"path"`
		Kind struct {
			Type string `json:"type"`
		} `json:"kind"`
	} `json:"changes"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Query  string `json:"query"`
}

// execItem turns an app-server item into the item of a codex exec --json
// line (which codex.Parser reads): the type in snake case, a file
// change's kind a word.
func execItem(raw json.RawMessage) (map[string]any, bool) {
	var it appItem
	if json.Unmarshal(raw, &it) != nil || it.Type == "" {
		return nil, false
	}
	out := map[string]any{"id": it.ID, "type": snakeCase(it.Type)}
	set := func(k, v string) {
		if v != "" {
			out[k] = v
		}
	}
	set("text", it.Text)
	set("command", it.Command)
	set("server", it.Server)
	set("tool", it.Tool)
	set("query", it.Query)
	if len(it.Changes) > 0 {
		ch := make([]map[string]string, len(it.Changes))
		for i, c := range it.Changes {
			ch[i] = map[string]string{"path": c.Path, "kind": c.Kind.Type}
		}
		out["changes"] = ch
	}
	return out, true
}

// snakeCase turns "commandExecution" into "command_execution".
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// execLine is the codex exec --json line of a turn's notification, nil
// for one that has none.
func execLine(method string, n appNote, usage tokenUsage) []byte {
	var v map[string]any
	switch method {
	case "item/started", "item/completed":
		it, ok := execItem(n.Item)
		if !ok {
			return nil
		}
		v = map[string]any{"type": strings.Replace(method, "/", ".", 1), "item": it}
	case "error":
		if n.Error == nil || n.WillRetry {
			return nil
		}
		v = map[string]any{"type": "error", "message": n.Error.Message}
	case "turn/completed":
		if n.Turn == nil {
			return nil
		}
		switch n.Turn.Status {
		case "completed":
			v = map[string]any{"type": "turn.completed", "usage": map[string]int64{
				"input_tokens": usage.Input, "cached_input_tokens": usage.CachedIn,
				"cache_write_input_tokens": usage.CacheWrite, "output_tokens": usage.Output}}
		default:
			msg := "turn " + n.Turn.Status
			if n.Turn.Error != nil && n.Turn.Error.Message != "" {
				msg = n.Turn.Error.Message
			}
			v = map[string]any{"type": "turn.failed", "error": map[string]string{"message": msg}}
		}
	default:
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

// answer is the client's answer to one of the server's requests, under
// the policy of codex exec: the thread runs with approval policy
// "never", so nothing should ask; what asks anyway is declined. The
// second result is a JSON-RPC error for the requests that have no
// declining answer.
func answer(method string) (any, *jsonrpc.Error) {
	switch method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		return map[string]string{"decision": "decline"}, nil
	case "execCommandApproval", "applyPatchApproval":
		return map[string]any{"decision": map[string]any{"denied": map[string]string{"rejection": "collab: no one to approve"}}}, nil
	case "mcpServer/elicitation/request":
		return map[string]any{"action": "decline", "content": nil, "_meta": nil}, nil
	case "item/permissions/requestApproval":
		return map[string]any{"permissions": map[string]any{}, "scope": "turn"}, nil
	case "item/tool/requestUserInput":
		return map[string]any{"answers": map[string]any{}}, nil
	}
	return nil, &jsonrpc.Error{Code: -32601, Message: "collab: " + method + " is not supported"}
}
