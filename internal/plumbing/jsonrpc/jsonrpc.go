// Package jsonrpc is the JSON-RPC 2.0 codec of the model CLIs' protocols
// collab speaks: the Agent Client Protocol (gemini --acp), Codex's
// app-server (which leaves the "jsonrpc" member out), over lines or
// WebSocket frames. It decodes one message and says what it is; the
// connections are their users'.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Kind is what a JSON-RPC message is.
type Kind int

const (
	Request      Kind = iota + 1 // method and id: answer it
	Notification                 // method, no id
	Response                     // id, result or error
)

// Msg is one JSON-RPC 2.0 message, of any kind.
type Msg struct {
	JSONRPC string          `json:"jsonrpc,omitempty"` // "2.0"; Codex's app-server leaves it out
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s (code %d)", e.Message, e.Code)
	if len(e.Data) > 0 && string(e.Data) != "null" {
		msg += ": " + string(e.Data)
	}
	return msg
}

// ErrNotRPC is the error of a line that is not a JSON-RPC 2.0 message.
var ErrNotRPC = errors.New("jsonrpc: not a JSON-RPC 2.0 message")

// Decode decodes one line, for ACP and Codex's app-server alike: a
// request, a notification (a method with no id, or a null one) or a
// response (whose id is a number or null: ids are ours, and numbers).
// The "jsonrpc" member is "2.0" or absent. Anything else, a batch
// included, is ErrNotRPC.
func Decode(line []byte) (Msg, Kind, error) {
	var m Msg
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return m, 0, ErrNotRPC
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, 0, fmt.Errorf("%w: %v", ErrNotRPC, err)
	}
	if m.JSONRPC != "2.0" && m.JSONRPC != "" {
		return m, 0, ErrNotRPC
	}
	null := string(bytes.TrimSpace(m.ID)) == "null"
	switch {
	case m.Method != "" && (m.Result != nil || m.Error != nil):
		return m, 0, ErrNotRPC
	case m.Method != "" && len(m.ID) > 0 && !null:
		return m, Request, nil
	case m.Method != "":
		m.ID = nil // a null id is none (Codex sends some notifications so)
		return m, Notification, nil
	case len(m.ID) > 0 && (m.Result == nil || m.Error == nil):
		return m, Response, nil // a result of null comes as no result
	}
	return m, 0, ErrNotRPC
}

// ResponseID is a response's id, -1 if it is not one of ours.
func ResponseID(m Msg) int64 {
	var id int64
	if json.Unmarshal(m.ID, &id) != nil || id <= 0 {
		return -1
	}
	return id
}

// IsRequest reports whether m is a request (the other side's, to answer).
func (m Msg) IsRequest() bool { return m.Method != "" && m.ID != nil }

// IsResponse reports whether m answers a request.
func (m Msg) IsResponse() bool { return m.Method == "" && m.ID != nil }

// IDKey is an id as a key: its JSON text, spaces trimmed.
func IDKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }
