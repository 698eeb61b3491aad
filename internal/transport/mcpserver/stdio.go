package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineLength bounds one line of input on standard input; a longer line
// is answered as a parse error and skipped.
const MaxLineLength = mcp.DefaultMaxLineLength

// RunIO serves one client over newline-delimited JSON-RPC on r and w (the
// process's standard input and output) until r ends or ctx ends. It
// closes neither.
//
// A line that is not one JSON-RPC message is answered with a JSON-RPC
// error whose id is null, parse error (-32700) for a line that is not
// JSON, invalid request (-32600) for JSON that is not a message or is a
// batch (an array of messages), and the session goes on. The SDK's own
// stdio transport would end the session on any of them (go-sdk issue
// #1209; a batch at protocol 2025-06-18 and later, or one reusing an id,
// at any version): such lines never reach it. A message reaches it alone
// on its line, without the blanks around it (the SDK ends the session on
// anything but a newline after a message).
func (s *Server) RunIO(ctx context.Context, r io.Reader, w io.Writer) error {
	out := &lineWriter{w: w}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.filterLines(r, pw, out)) }()
	defer pr.Close() // ends the filter at its next line
	return s.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: out})
}

// filterLines copies each line of r that is one JSON-RPC message to pw,
// trimmed, answers every other line on out, and returns r's error (nil at
// its end).
func (s *Server) filterLines(r io.Reader, pw io.Writer, out *lineWriter) error {
	br := bufio.NewReaderSize(r, 64*1024)
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > MaxLineLength {
				tooLong, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(trimJSONSpace(line)) > 0 || tooLong {
			msg, code, text := checkLine(line)
			if tooLong {
				code, text = jsonrpc.CodeParseError, "Parse error: line too long"
			}
			if code == 0 {
				if _, werr := pw.Write(append(msg, '\n')); werr != nil {
					return werr
				}
			} else {
				s.cfg.Logger.Warn("malformed input answered", keyErr, text)
				if werr := out.reply(code, text); werr != nil {
					return werr
				}
			}
		}
		line, tooLong = line[:0], false
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// checkLine returns line without its leading and trailing blanks when it
// is one JSON-RPC message (a JSON object the SDK decodes as a request,
// notification or response), else code and text, the JSON-RPC error to
// answer with: parse error for a line that is not one JSON value, invalid
// request for any other value, a batch included.
func checkLine(line []byte) (msg []byte, code int64, text string) {
	if !json.Valid(line) {
		return nil, jsonrpc.CodeParseError, "Parse error"
	}
	const invalid = "Invalid Request"
	msg = trimJSONSpace(line)
	switch msg[0] {
	case '{':
	case '[':
		return nil, jsonrpc.CodeInvalidRequest, invalid + ": batches are not supported; send one message a line"
	default:
		return nil, jsonrpc.CodeInvalidRequest, invalid + ": not a JSON object"
	}
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		return nil, jsonrpc.CodeInvalidRequest, invalid + ": " + err.Error()
	}
	return msg, 0, ""
}

// trimJSONSpace returns b without the blanks JSON allows around a value
// (space, tab, CR, LF) at either end.
func trimJSONSpace(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }

// lineWriter writes whole lines to w, one at a time: the SDK writes each
// message as one line in one Write, and reply writes its own. Close does
// nothing: the server must not close the process's standard output.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (*lineWriter) Close() error { return nil }

// reply writes a JSON-RPC error response with a null id.
func (l *lineWriter) reply(code int64, message string) error {
	data, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", nil, &jsonrpc.Error{Code: code, Message: message}})
	if err != nil {
		return err
	}
	_, err = l.Write(append(data, '\n'))
	return err
}
