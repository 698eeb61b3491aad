package join

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/collabdev/collab/internal/agent/modelcli"
	"github.com/collabdev/collab/internal/agent/modelcli/codex"
	"github.com/collabdev/collab/internal/plumbing/jsonrpc"
	"github.com/collabdev/collab/internal/plumbing/proc"
)

// Codex (0.169) has no hook that can wake a session, but its TUI can run
// on an app-server of someone else's (codex --remote), which any other
// client of that server can start turns in. So collab starts a private
// `codex app-server --listen unix://DIR/app.sock` (the collab MCP server
// declared with -c, its tools approved), runs the person's TUI as
// `codex --remote unix://DIR/app.sock`, and joins the same server as a
// second client (JSON-RPC in WebSocket text frames over the socket):
//
//   - the TUI's thread is the newest non-ephemeral thread without a parent
//     (thread/loaded/list, thread/started);
//   - idle (thread/status/changed), a batch starts a turn (turn/start);
//     busy, it goes into the running turn after its tool (turn/steer with
//     the turn's id), falling back to turn/start, which Codex 0.169 also
//     steers into a running turn;
//   - each carries clientUserMessageId, and item/started of a userMessage
//     with that clientId, once the input reached the model, is the read.
//     The client sees a thread's turns and items only after thread/resume,
//     which Codex allows once the thread has had a turn: a batch delivered
//     before that is found, once it can resume, in the thread's history
//     (thread/read), or is read when answered.
//
// The TUI shows a delivered batch as a line of the person's own ("› …").

// Codex is the Codex CLI's way in.
type Codex struct {
	Bin  string   // default "codex"
	Args []string // the person's own arguments (for the TUI)
	Env  []string // added to the environment

	sock   string
	server *exec.Cmd
	log    func(msg string, args ...any)
}

func (c *Codex) Name() string    { return "codex" }
func (c *Codex) Model() []string { return nil } // reads come from the app-server

func (c *Codex) bin() string {
	if c.Bin == "" {
		return "codex"
	}
	return c.Bin
}

// Command starts the app-server and returns the TUI's command.
func (c *Codex) Command(s *Session, _ string, mcp MCP) (*exec.Cmd, error) {
	declare, err := codex.MCPArgs([]modelcli.MCPServer{{Name: "collab", Command: mcp.Exe, Args: mcp.Args,
		EnvVars: []string{"COLLAB_KEY", "COLLAB_KEYRING", "XDG_CONFIG_HOME"}}})
	if err != nil {
		return nil, err
	}
	c.sock = filepath.Join(s.cfg.Dir, "app.sock")
	c.log = s.cfg.Logger.Info
	env := append(os.Environ(), c.Env...)
	c.server = exec.Command(c.bin(), append([]string{"app-server", "--listen", "unix://" + c.sock}, declare...)...)
	c.server.Env = env
	c.server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := c.server.Start(); err != nil {
		return nil, fmt.Errorf("join: codex app-server: %w", err)
	}
	// The TUI connects at once: wait for the socket.
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Stat(c.sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			c.Close()
			return nil, errors.New("join: codex app-server did not listen within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd := exec.Command(c.bin(), append([]string{"--remote", "unix://" + c.sock}, c.Args...)...)
	cmd.Env = env
	return cmd, nil
}

// Close ends the app-server.
func (c *Codex) Close() error {
	if c.server == nil || c.server.Process == nil {
		return nil
	}
	proc.EndGroup(c.server.Process.Pid, 2*time.Second)
	c.server.Wait()
	return nil
}

// Serve delivers s's batches through the app-server until ctx ends.
func (c *Codex) Serve(ctx context.Context, s *Session) {
	for ctx.Err() == nil {
		cl, err := dialApp(ctx, c.sock)
		if err != nil {
			if sleepCtx(ctx, time.Second) != nil {
				return
			}
			continue
		}
		cl.serve(ctx, s)
		cl.close()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// appClient is collab's connection to the app-server.
type appClient struct {
	conn *websocket.Conn

	mu      sync.Mutex
	next    int
	pending map[string]chan jsonrpc.Msg
	thread  string           // the TUI's thread
	busy    bool             // a turn runs
	turn    string           // its id, once known
	resumed bool             // subscribed to the thread's turns and items
	hadTurn bool             // the thread has had a turn (it can be resumed)
	batches map[string]Batch // delivered, by clientUserMessageId, until read
	changed chan struct{}    // closed when the thread's state changes
	readIDs chan []string    // ids the app-server showed read
	done    chan struct{}    // closed when the connection ends
}

func dialApp(ctx context.Context, sock string) (*appClient, error) {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(dctx, "ws://localhost/", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(64 << 20)
	cl := &appClient{conn: conn, pending: make(map[string]chan jsonrpc.Msg), batches: make(map[string]Batch),
		changed: make(chan struct{}), readIDs: make(chan []string, 16), done: make(chan struct{})}
	go cl.read(ctx)
	if _, err := cl.call(ctx, "initialize", map[string]any{"clientInfo": map[string]any{"name": "collab-join", "title": nil, "version": "1"},
		"capabilities": map[string]any{"experimentalApi": true}}); err != nil {
		cl.close()
		return nil, err
	}
	if err := cl.send(ctx, map[string]any{"method": "initialized"}); err != nil {
		cl.close()
		return nil, err
	}
	return cl, nil
}

func (cl *appClient) close() { cl.conn.Close(websocket.StatusNormalClosure, "") }

func (cl *appClient) send(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return cl.conn.Write(ctx, websocket.MessageText, b)
}

// call sends a request and waits for its response.
func (cl *appClient) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	cl.mu.Lock()
	cl.next++
	id := fmt.Sprint(cl.next)
	ch := make(chan jsonrpc.Msg, 1)
	cl.pending[id] = ch
	cl.mu.Unlock()
	if err := cl.send(ctx, map[string]any{"id": cl.next, "method": method, "params": params}); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %w", method, m.Error)
		}
		return m.Result, nil
	case <-cl.done:
		return nil, fmt.Errorf("%s: the app-server went away", method)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read reads the server's messages until the connection ends.
func (cl *appClient) read(ctx context.Context) {
	defer close(cl.done)
	for {
		_, b, err := cl.conn.Read(ctx)
		if err != nil {
			return
		}
		m, kind, err := jsonrpc.Decode(b)
		switch {
		case err != nil:
		case kind == jsonrpc.Response:
			cl.mu.Lock()
			ch := cl.pending[jsonrpc.IDKey(m.ID)]
			delete(cl.pending, jsonrpc.IDKey(m.ID))
			cl.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case kind == jsonrpc.Request:
			// Not this client's to answer (approvals go to the TUI).
		default:
			cl.note(m)
		}
	}
}

// appEvent is the part of a notification the client reads.
type appEvent struct {
	ThreadID string `json:"threadId"`
	Thread   struct {
		ID        string  `json:"id"`
		Ephemeral bool    `json:"ephemeral"`
		Parent    *string `json:"parentThreadId"`
	} `json:"thread"`
	Status struct {
		Type string `json:"type"`
	} `json:"status"`
	Turn struct {
		ID string `json:"id"`
	} `json:"turn"`
	Item struct {
		Type     string `json:"type"`
		ClientID string `json:"clientId"`
	} `json:"item"`
}

// note takes one notification.
func (cl *appClient) note(m jsonrpc.Msg) {
	var e appEvent
	json.Unmarshal(m.Params, &e)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	was := [3]any{cl.thread, cl.busy, cl.turn}
	switch m.Method {
	case "thread/started":
		if !e.Thread.Ephemeral && e.Thread.Parent == nil && e.Thread.ID != "" {
			cl.thread, cl.busy, cl.turn, cl.resumed, cl.hadTurn = e.Thread.ID, false, "", false, false
		}
	case "thread/status/changed":
		if e.ThreadID == cl.thread {
			active := e.Status.Type == "active"
			if cl.busy && !active {
				cl.hadTurn, cl.turn = true, ""
			}
			cl.busy = active
		}
	case "turn/started":
		if e.ThreadID == cl.thread {
			cl.busy, cl.turn = true, e.Turn.ID
		}
	case "turn/completed":
		if e.ThreadID == cl.thread {
			cl.busy, cl.turn, cl.hadTurn = false, "", true
		}
	case "item/started":
		if b, ok := cl.batches[e.Item.ClientID]; ok && e.Item.Type == "userMessage" {
			delete(cl.batches, e.Item.ClientID)
			select {
			case cl.readIDs <- b.IDs():
			default:
			}
		}
	}
	if was != [3]any{cl.thread, cl.busy, cl.turn} {
		close(cl.changed)
		cl.changed = make(chan struct{})
	}
}

// serve delivers until the connection or ctx ends.
func (cl *appClient) serve(ctx context.Context, s *Session) {
	if err := cl.findThread(ctx); err != nil {
		return
	}
	for {
		cl.subscribe(ctx)
		b := cl.takeWhileWatching(ctx, s)
		if len(b) == 0 {
			return // ctx or the connection ended
		}
		if err := cl.deliver(ctx, b, s.cfg.Agent); err != nil {
			s.cfg.Logger.Warn("cannot deliver to codex; trying again", "err", err)
			s.putBack(b)
			if sleepCtx(ctx, time.Second) != nil {
				return
			}
			continue
		}
		s.delivered(b)
	}
}

// takeWhileWatching waits for a batch, marking reads meanwhile; nil when
// ctx or the connection ends.
func (cl *appClient) takeWhileWatching(ctx context.Context, s *Session) Batch {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan Batch, 1)
	go func() { got <- s.take(tctx, true) }()
	for {
		select {
		case b := <-got:
			return b
		case ids := <-cl.readIDs:
			for _, id := range ids {
				s.markRead(id)
			}
		case <-cl.done:
			cancel()
			s.putBack(<-got)
			return nil
		}
	}
}

// findThread waits for the TUI's thread.
func (cl *appClient) findThread(ctx context.Context) error {
	for {
		cl.mu.Lock()
		thread, changed := cl.thread, cl.changed
		cl.mu.Unlock()
		if thread != "" {
			return nil
		}
		if res, err := cl.call(ctx, "thread/loaded/list", map[string]any{}); err == nil {
			var list struct {
				Data []string `json:"data"`
			}
			if json.Unmarshal(res, &list) == nil && len(list.Data) > 0 {
				cl.mu.Lock()
				if cl.thread == "" {
					cl.thread = list.Data[len(list.Data)-1]
				}
				cl.mu.Unlock()
				continue
			}
		}
		select {
		case <-changed:
		case <-time.After(200 * time.Millisecond):
		case <-cl.done:
			return errors.New("the app-server went away")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// subscribe resumes the thread once it can be, to see its turns and items.
func (cl *appClient) subscribe(ctx context.Context) {
	cl.mu.Lock()
	thread, ok := cl.thread, cl.hadTurn && !cl.resumed
	cl.mu.Unlock()
	if !ok {
		return
	}
	if _, err := cl.call(ctx, "thread/resume", map[string]any{"threadId": thread, "excludeTurns": true}); err != nil {
		return
	}
	cl.mu.Lock()
	cl.resumed = true
	cl.mu.Unlock()
	cl.catchUp(ctx, thread)
}

// catchUp finds, in the thread's history, the batches delivered before
// the client could see its items (before its first turn): a user message
// with a batch's clientUserMessageId reached the model.
func (cl *appClient) catchUp(ctx context.Context, thread string) {
	cl.mu.Lock()
	waiting := len(cl.batches)
	cl.mu.Unlock()
	if waiting == 0 {
		return
	}
	res, err := cl.call(ctx, "thread/read", map[string]any{"threadId": thread, "includeTurns": true})
	if err != nil {
		return
	}
	var r struct {
		Thread struct {
			Turns []struct {
				Items []struct {
					Type     string `json:"type"`
					ClientID string `json:"clientId"`
				} `json:"items"`
			} `json:"turns"`
		} `json:"thread"`
	}
	if json.Unmarshal(res, &r) != nil {
		return
	}
	for _, t := range r.Thread.Turns {
		for _, it := range t.Items {
			cl.mu.Lock()
			b, ok := cl.batches[it.ClientID]
			if ok && it.Type == "userMessage" {
				delete(cl.batches, it.ClientID)
			}
			cl.mu.Unlock()
			if ok && it.Type == "userMessage" {
				select {
				case cl.readIDs <- b.IDs():
				default:
				}
			}
		}
	}
}

// deliver hands b to the thread: into the running turn, or as a new one.
func (cl *appClient) deliver(ctx context.Context, b Batch, agent string) error {
	cl.mu.Lock()
	thread, busy, turn := cl.thread, cl.busy, cl.turn
	cid := "collab-" + b[0].Message.ID
	cl.batches[cid] = b
	cl.mu.Unlock()
	input := []map[string]any{{"type": "text", "text": b.Text(agent), "text_elements": []any{}}}
	if busy && turn != "" {
		_, err := cl.call(ctx, "turn/steer", map[string]any{"threadId": thread, "expectedTurnId": turn, "input": input, "clientUserMessageId": cid})
		if err == nil {
			return nil
		}
	}
	_, err := cl.call(ctx, "turn/start", map[string]any{"threadId": thread, "input": input, "clientUserMessageId": cid})
	return err
}
