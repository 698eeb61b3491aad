package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

// stdioSession is a server run by RunIO over pipes, spoken to line by line
// as a client on standard input and output would.
type stdioSession struct {
	t     *testing.T
	in    *io.PipeWriter
	lines *bufio.Scanner
	next  int // the next request id
}

// startStdio runs RunIO for agent claude on channel dev and initializes
// the session at protocol version.
func startStdio(t *testing.T, version string) *stdioSession {
	t.Helper()
	s, err := New(Config{Root: tree.Root(t.TempDir()), Agent: "claude", Channel: "dev", Hops: -1})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	done := make(chan error, 1)
	go func() {
		done <- s.RunIO(ctx, inR, outW)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		if err := <-done; err != nil {
			t.Errorf("RunIO: %v", err)
		}
		cancel()
	})
	ss := &stdioSession{t: t, in: inW, lines: bufio.NewScanner(outR), next: 1}
	ss.lines.Buffer(nil, 1<<20)
	init := ss.exchange(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`, ss.id(), version))
	if init["result"] == nil {
		t.Fatalf("initialize = %v", init)
	}
	ss.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return ss
}

func (ss *stdioSession) id() int { ss.next++; return ss.next - 1 }

func (ss *stdioSession) send(line string) {
	ss.t.Helper()
	if _, err := io.WriteString(ss.in, line+"\n"); err != nil {
		ss.t.Fatalf("write %q: %v", line, err)
	}
}

// exchange sends line and returns the next line of output, decoded.
func (ss *stdioSession) exchange(line string) map[string]any {
	ss.t.Helper()
	ss.send(line)
	if !ss.lines.Scan() {
		ss.t.Fatalf("after %q: no answer (%v); the session ended", line, ss.lines.Err())
	}
	var got map[string]any
	if err := json.Unmarshal(ss.lines.Bytes(), &got); err != nil {
		ss.t.Fatalf("answer to %q: %q: %v", line, ss.lines.Text(), err)
	}
	return got
}

// listTools calls tools/list (its line followed by suffix) and checks the
// answer is its result: the session is going.
func (ss *stdioSession) listTools(after, suffix string) {
	ss.t.Helper()
	id := ss.id()
	got := ss.exchange(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id) + suffix)
	if got["id"] != float64(id) || got["result"] == nil {
		ss.t.Errorf("tools/list after %q = %v; want its result", after, got)
	}
}

// TestStdioBadLines: a line that is not one JSON-RPC message (a batch, a
// JSON value that is not a message, not JSON at all) is answered with an
// error whose id is null, and the next call is answered; a line the
// server answers nothing (a response it did not ask for) leaves it going
// too. Batches are refused at every protocol version: the SDK ends the
// session on one at 2025-06-18 and later, and on a batch reusing an id
// at any version.
func TestStdioBadLines(t *testing.T) {
	for _, version := range []string{"2025-06-18", "2025-03-26"} {
		t.Run(version, func(t *testing.T) {
			ss := startStdio(t, version)
			for _, tc := range []struct {
				name, line string
				code       float64 // 0: no answer
			}{
				{"batch", `[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, jsonrpc.CodeInvalidRequest},
				{"batch of a notification", `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, jsonrpc.CodeInvalidRequest},
				{"batch reusing an id", `[{"jsonrpc":"2.0","id":7,"method":"ping"},{"jsonrpc":"2.0","id":7,"method":"ping"}]`, jsonrpc.CodeInvalidRequest},
				{"empty batch", `[]`, jsonrpc.CodeInvalidRequest},
				{"batch of a number", `[1]`, jsonrpc.CodeInvalidRequest},
				{"number", `42`, jsonrpc.CodeInvalidRequest},
				{"string", `"ping"`, jsonrpc.CodeInvalidRequest},
				{"null", `null`, jsonrpc.CodeInvalidRequest},
				{"empty object", `{}`, jsonrpc.CodeInvalidRequest},
				{"no method nor id", `{"jsonrpc":"2.0","params":{}}`, jsonrpc.CodeInvalidRequest},
				{"not json", "\x1b[31mnot json", jsonrpc.CodeParseError},
				{"cut short", `{"jsonrpc":"2.0","id":1,"method":"ping"`, jsonrpc.CodeParseError},
				{"two messages", `{"jsonrpc":"2.0","method":"notifications/initialized"} {"jsonrpc":"2.0","method":"notifications/initialized"}`, jsonrpc.CodeParseError},
				{"a response not asked for", `{"jsonrpc":"2.0","id":99,"result":{}}`, 0},
				{"an id alone (a response to the SDK)", `{"jsonrpc":"2.0","id":3}`, 0},
			} {
				if tc.code != 0 {
					got := ss.exchange(tc.line)
					e, _ := got["error"].(map[string]any)
					if id, ok := got["id"]; !ok || id != nil || e == nil || e["code"] != tc.code {
						t.Errorf("%s: answer to %q = %v; want error %v with id null", tc.name, tc.line, got, tc.code)
					}
				} else {
					ss.send(tc.line)
				}
				ss.listTools(tc.line, "")
			}
			// Blanks around a message are not an error.
			ss.listTools("a message with blanks after it", " \t\r")
		})
	}
}

// FuzzFilterLines: every non-blank line of the input is either passed to
// the SDK, alone and trimmed, as one JSON object it decodes as a message,
// or answered with a parse error (not JSON) or an invalid request (any
// other JSON, a batch included), never both; blank lines are neither.
func FuzzFilterLines(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n",
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]` + "\n",
		"42\n{}\n\n  \r\n[]\nnull\n\"x\"\n",
		`{"jsonrpc":"2.0","id":2,"method":"ping"} ` + "\t\r\n" + `{"jsonrpc":"2.0","method":"x"}`,
		"\x1b[31mnot json\n{\"jsonrpc\":\"2.0\",\"id\":3}\n",
		`{"jsonrpc":"2.0","method":"x"} {"jsonrpc":"2.0","method":"y"}`,
	} {
		f.Add([]byte(s))
	}
	s := &Server{cfg: Config{Logger: slog.New(slog.DiscardHandler)}}
	f.Fuzz(func(t *testing.T, in []byte) {
		var passed, answered bytes.Buffer
		if err := s.filterLines(bytes.NewReader(in), &passed, &lineWriter{w: &answered}); err != nil {
			t.Fatal(err)
		}
		var lines [][]byte
		for line := range bytes.Lines(in) {
			if len(trimJSONSpace(line)) > 0 {
				lines = append(lines, line)
			}
		}
		fwd := slices.Collect(bytes.Lines(passed.Bytes()))
		ans := slices.Collect(bytes.Lines(answered.Bytes()))
		if len(fwd)+len(ans) != len(lines) {
			t.Fatalf("%d lines in, %d passed and %d answered", len(lines), len(fwd), len(ans))
		}
		var f, a int
		for _, line := range lines {
			trimmed := trimJSONSpace(line)
			isMsg := json.Valid(trimmed) && trimmed[0] == '{'
			if isMsg {
				_, err := jsonrpc.DecodeMessage(trimmed)
				isMsg = err == nil
			}
			if isMsg {
				if f >= len(fwd) || !bytes.Equal(fwd[f], append(trimmed, '\n')) {
					t.Fatalf("message %q not passed on alone and trimmed: %q", line, fwd)
				}
				f++
				continue
			}
			if a >= len(ans) {
				t.Fatalf("%q not answered", line)
			}
			var got struct {
				ID    json.RawMessage `json:"id"`
				Error *jsonrpc.Error  `json:"error"`
			}
			if err := json.Unmarshal(ans[a], &got); err != nil || got.Error == nil || string(got.ID) != "null" {
				t.Fatalf("answer to %q = %q: want an error with id null", line, ans[a])
			}
			want := int64(jsonrpc.CodeInvalidRequest)
			if !json.Valid(line) {
				want = jsonrpc.CodeParseError
			}
			if got.Error.Code != want {
				t.Fatalf("answer to %q = %q: want code %d", line, ans[a], want)
			}
			a++
		}
	})
}
