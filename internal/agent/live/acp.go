package live

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/collabdev/collab/internal/plumbing/jsonrpc"
)

// The Agent Client Protocol (ACP, agentclientprotocol.com) is JSON-RPC 2.0
// over the agent's standard input and output, one message a line. The
// client (here) calls the agent's methods (initialize, session/new,
// session/load, session/prompt) and notifies it (session/cancel); the
// agent notifies the client (session/update) and calls it
// (session/request_permission).

// rpcLater is the error a handler returns for a request it answers later,
// with [acpConn.respond]: nothing is sent now.
var rpcLater = &jsonrpc.Error{Code: -32603, Message: "answered later"}

// acpConn is the client's end of a connection: it sends calls and
// notifications, and its reader (serve) hands responses to the calls
// waiting for them, and the agent's notifications and requests to
// handle. It does not know ACP's methods.
type acpConn struct {
	in  io.Writer
	wmu sync.Mutex // writes to in

	mu      sync.Mutex
	next    int64
	pending map[int64]chan jsonrpc.Msg
	ended   bool // serve has returned: no more responses

	// handle is called by serve, in order, for each notification and
	// request of the agent; a request's answer is its result, or its
	// error.
	handle func(kind jsonrpc.Kind, m jsonrpc.Msg) (any, *jsonrpc.Error)
}

func newACPConn(in io.Writer, handle func(jsonrpc.Kind, jsonrpc.Msg) (any, *jsonrpc.Error)) *acpConn {
	return &acpConn{in: in, pending: make(map[int64]chan jsonrpc.Msg), handle: handle}
}

// send writes one message as a line.
func (c *acpConn) send(m jsonrpc.Msg) error {
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
func (c *acpConn) call(method string, params any) (<-chan jsonrpc.Msg, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ch := make(chan jsonrpc.Msg, 1)
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
	if err := c.send(jsonrpc.Msg{ID: json.RawMessage(fmt.Sprint(id)), Method: method, Params: p}); err != nil {
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
	return c.send(jsonrpc.Msg{Method: method, Params: p})
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
	m, kind, err := jsonrpc.Decode(b)
	switch {
	case err != nil:
	case kind == jsonrpc.Response:
		id := jsonrpc.ResponseID(m)
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case kind == jsonrpc.Notification:
		c.handle(kind, m)
	case kind == jsonrpc.Request:
		res, rerr := c.handle(kind, m)
		if rerr != rpcLater {
			c.respond(m.ID, res, rerr) // a failed write is the process's end, which serve sees
		}
	}
}

// respond answers the agent's request id with res, or with rerr.
func (c *acpConn) respond(id json.RawMessage, res any, rerr *jsonrpc.Error) error {
	reply := jsonrpc.Msg{ID: id, Error: rerr}
	if rerr == nil {
		var err error
		if reply.Result, err = json.Marshal(res); err != nil {
			reply.Result, reply.Error = nil, &jsonrpc.Error{Code: -32603, Message: err.Error()}
		}
	}
	return c.send(reply)
}

// result decodes a response's result into v, or returns its error.
func result(m jsonrpc.Msg, v any) error {
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
