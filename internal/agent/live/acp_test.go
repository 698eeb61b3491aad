package live

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/plumbing/jsonrpc"
)

// TestACPConn runs a conversation with a scripted agent: a call answered
// after a notification and a permission request (refused), a call
// answered with an error, and a call cut short by the agent's end.
func TestACPConn(t *testing.T) {
	toAgent, fromClient := pipe(t) // buffered, as a process's are
	toClient, fromAgent := pipe(t)
	type seen struct {
		kind   jsonrpc.Kind
		method string
	}
	got := make(chan seen, 8)
	c := newACPConn(fromClient, func(k jsonrpc.Kind, m jsonrpc.Msg) (any, *jsonrpc.Error) {
		got <- seen{k, m.Method}
		if m.Method == "session/request_permission" {
			return refusal(m.Params, false), nil
		}
		return nil, nil
	})
	served := make(chan struct{})
	go func() { c.serve(toClient, 1<<20); close(served) }()

	agent := bufio.NewReader(toAgent)
	read := func() jsonrpc.Msg {
		t.Helper()
		line, err := agent.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := jsonrpc.Decode(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return m
	}
	write := func(s string) {
		t.Helper()
		if _, err := io.WriteString(fromAgent, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}

	ch, err := c.call("session/prompt", map[string]string{"sessionId": "s"})
	if err != nil {
		t.Fatal(err)
	}
	if m := read(); m.Method != "session/prompt" || string(m.ID) != "1" {
		t.Fatalf("got %+v", m)
	}
	write(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}}`)
	write(`not a message`)
	write(`{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"options":[{"optionId":"proceed_once","kind":"allow_once"},{"optionId":"cancel","kind":"reject_once"}]}}`)
	if m := read(); string(m.ID) != `"p1"` || !strings.Contains(string(m.Result), `"optionId":"cancel"`) {
		t.Fatalf("permission answered %+v (result %s)", m, m.Result)
	}
	write(`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`)
	var r acpPromptResult
	if err := result(<-ch, &r); err != nil || r.StopReason != "end_turn" {
		t.Fatalf("got %+v, %v", r, err)
	}
	if a, b := <-got, <-got; a != (seen{jsonrpc.Notification, "session/update"}) || b != (seen{jsonrpc.Request, "session/request_permission"}) {
		t.Errorf("handled %v, %v", a, b)
	}

	ch, _ = c.call("session/load", map[string]string{"sessionId": "gone"})
	read()
	write(`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":{"details":"No previous sessions found for this project."}}}`)
	var rerr *jsonrpc.Error
	if err := result(<-ch, nil); !errors.As(err, &rerr) || !strings.Contains(err.Error(), "No previous sessions") {
		t.Fatalf("got %v, want the agent's error", err)
	}

	ch, _ = c.call("session/prompt", nil)
	read()
	fromAgent.Close()
	select {
	case m, ok := <-ch:
		if ok {
			t.Fatalf("got %+v after the agent's end, want the channel closed", m)
		}
	case <-time.After(time.Minute):
		t.Fatal("the call was not ended with the connection")
	}
	<-served
	if ch, err := c.call("x", nil); err != nil || func() bool { _, ok := <-ch; return ok }() {
		t.Errorf("a call after the end: %v, want a closed channel", err)
	}
}

func TestRefusal(t *testing.T) {
	b, _ := json.Marshal(refusal(json.RawMessage(`{"options":[{"optionId":"proceed_once","kind":"allow_once"}]}`), false))
	if string(b) != `{"outcome":{"outcome":"cancelled"}}` {
		t.Errorf("got %s, want the outcome cancelled", b)
	}
	// Once the turn is being cancelled, the answer is "cancelled".
	b, _ = json.Marshal(refusal(json.RawMessage(`{"options":[{"optionId":"cancel","kind":"reject_once"}]}`), true))
	if string(b) != `{"outcome":{"outcome":"cancelled"}}` {
		t.Errorf("cancelling: got %s, want the outcome cancelled", b)
	}
}

func pipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}
