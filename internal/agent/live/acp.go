package live

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The Agent Client Protocol (ACP, agentclientprotocol.com) is JSON-RPC 2.0
// over the agent's standard input and output, one message a line. The
// client (here) calls the agent's methods (initialize, session/new,
// session/load, session/prompt) and notifies it (session/cancel); the
// agent notifies the client (session/update) and calls it
// (session/request_permission).

// rpcKind is what a JSON-RPC message is.
type rpcKind int

const (
	rpcRequest      rpcKind = iota + 1 // method and id: answer it
	rpcNotification                    // method, no id
	rpcResponse                        // id, result or error
)

// rpcMsg is one JSON-RPC 2.0 message, of any kind.
type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc,omitempty"` // "2.0"; Codex's app-server leaves it out
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	msg := fmt.Sprintf("%s (code %d)", e.Message, e.Code)
	if len(e.Data) > 0 && string(e.Data) != "null" {
		msg += ": " + string(e.Data)
	}
	return msg
}

// rpcLater is the error a handler returns for a request it answers later,
// with [acpConn.respond]: nothing is sent now.
var rpcLater = &rpcError{Code: -32603, Message: "answered later"}

// errNotRPC is the error of a line that is not a JSON-RPC 2.0 message.
var errNotRPC = errors.New("live: not a JSON-RPC 2.0 message")

// decodeRPC decodes one line, for ACP and Codex's app-server alike: a
// request, a notification (a method with no id, or a null one) or a
// response (whose id is a number or null: ids are ours, and numbers).
// The "jsonrpc" member is "2.0" or absent. Anything else, a batch
// included, is errNotRPC.
func decodeRPC(line []byte) (rpcMsg, rpcKind, error) {
	var m rpcMsg
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return m, 0, errNotRPC
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, 0, fmt.Errorf("%w: %v", errNotRPC, err)
	}
	if m.JSONRPC != "2.0" && m.JSONRPC != "" {
		return m, 0, errNotRPC
	}
	null := string(bytes.TrimSpace(m.ID)) == "null"
	switch {
	case m.Method != "" && (m.Result != nil || m.Error != nil):
		return m, 0, errNotRPC
	case m.Method != "" && len(m.ID) > 0 && !null:
		return m, rpcRequest, nil
	case m.Method != "":
		m.ID = nil // a null id is none (Codex sends some notifications so)
		return m, rpcNotification, nil
	case len(m.ID) > 0 && (m.Result == nil || m.Error == nil):
		return m, rpcResponse, nil // a result of null comes as no result
	}
	return m, 0, errNotRPC
}

// responseID is a response's id, -1 if it is not one of ours.
func responseID(m rpcMsg) int64 {
	var id int64
	if json.Unmarshal(m.ID, &id) != nil || id <= 0 {
		return -1
	}
	return id
}

// acpConn is the client's end of a connection: it sends calls and
// notifications, and its reader (serve) hands responses to the calls
// waiting for them, and the agent's notifications and requests to
// handle. It does not know ACP's methods.
type acpConn struct {
	in  io.Writer
	wmu sync.Mutex // writes to in

	mu      sync.Mutex
	next    int64
	pending map[int64]chan rpcMsg
	ended   bool // serve has returned: no more responses

	// handle is called by serve, in order, for each notification and
	// request of the agent; a request's answer is its result, or its
	// error.
	handle func(kind rpcKind, m rpcMsg) (any, *rpcError)
}

func newACPConn(in io.Writer, handle func(rpcKind, rpcMsg) (any, *rpcError)) *acpConn {
	return &acpConn{in: in, pending: make(map[int64]chan rpcMsg), handle: handle}
}

// send writes one message as a line.
func (c *acpConn) send(m rpcMsg) error {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.in.Write(append(b, '\n'))
	return err
}

// call sends a request; its response comes on the channel, which is
// closed without one when the connection ends first.
func (c *acpConn) call(method string, params any) (<-chan rpcMsg, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ch := make(chan rpcMsg, 1)
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		close(ch)
		return ch, nil
	}
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	if err := c.send(rpcMsg{ID: json.RawMessage(fmt.Sprint(id)), Method: method, Params: p}); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, fmt.Errorf("acp: %s: %w", method, err)
	}
	return ch, nil
}

// notify sends a notification.
func (c *acpConn) notify(method string, params any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.send(rpcMsg{Method: method, Params: p})
}

// serve reads the agent's output until its end (lines longer than limit
// are cut, and dropped), then ends every pending call.
func (c *acpConn) serve(out io.Reader, limit int) {
	r := bufio.NewReaderSize(out, 64<<10)
	for {
		b, cut, err := readLine(r, limit)
		if len(b) > 0 && !cut {
			c.dispatch(b)
		}
		if err != nil {
			break
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}

// dispatch handles one line; a line that is not JSON-RPC is dropped.
func (c *acpConn) dispatch(b []byte) {
	m, kind, err := decodeRPC(b)
	switch {
	case err != nil:
	case kind == rpcResponse:
		id := responseID(m)
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case kind == rpcNotification:
		c.handle(kind, m)
	case kind == rpcRequest:
		res, rerr := c.handle(kind, m)
		if rerr != rpcLater {
			c.respond(m.ID, res, rerr) // a failed write is the process's end, which serve sees
		}
	}
}

// respond answers the agent's request id with res, or with rerr.
func (c *acpConn) respond(id json.RawMessage, res any, rerr *rpcError) error {
	reply := rpcMsg{ID: id, Error: rerr}
	if rerr == nil {
		var err error
		if reply.Result, err = json.Marshal(res); err != nil {
			reply.Result, reply.Error = nil, &rpcError{Code: -32603, Message: err.Error()}
		}
	}
	return c.send(reply)
}

// result decodes a response's result into v, or returns its error.
func result(m rpcMsg, v any) error {
	if m.Error != nil {
		return m.Error
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(m.Result, v); err != nil {
		return fmt.Errorf("acp: result: %w", err)
	}
	return nil
}
