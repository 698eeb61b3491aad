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
// A line that is not a JSON-RPC message is answered with a JSON-RPC error
// whose id is null, parse error (-32700) for a line that is not JSON,
// invalid request (-32600) for JSON that is not a message, and the session
// goes on. The SDK's own stdio transport would end the session on it
// (go-sdk issue #1209): such lines never reach it.
func (s *Server) RunIO(ctx context.Context, r io.Reader, w io.Writer) error {
	out := &lineWriter{w: w}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.filterLines(r, pw, out)) }()
	defer pr.Close() // ends the filter at its next line
	return s.Run(ctx, &mcp.IOTransport{Reader: pr, Writer: out})
}

// filterLines copies each line of r that is a JSON-RPC message (or a batch
// of them) to pw, answers every other line on out, and returns r's error
// (nil at its end).
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
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			code, msg := checkLine(line)
			if tooLong {
				code, msg = jsonrpc.CodeParseError, "Parse error: line too long"
			}
			if code == 0 {
				if _, werr := pw.Write(line); werr != nil {
					return werr
				}
			} else {
				s.cfg.Logger.Warn("malformed input answered", keyErr, msg)
				if werr := out.reply(code, msg); werr != nil {
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

// checkLine returns 0 for a line that is a JSON-RPC message or a non-empty
// batch of them, else the JSON-RPC error code and message to answer with.
func checkLine(line []byte) (int64, string) {
	if !json.Valid(line) {
		return jsonrpc.CodeParseError, "Parse error"
	}
	const invalid = "Invalid Request"
	trimmed := bytes.TrimSpace(line)
	if trimmed[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(trimmed, &batch); err != nil || len(batch) == 0 {
			return jsonrpc.CodeInvalidRequest, invalid
		}
		for _, raw := range batch {
			if _, err := jsonrpc.DecodeMessage(raw); err != nil {
				return jsonrpc.CodeInvalidRequest, invalid + ": " + err.Error()
			}
		}
		return 0, ""
	}
	if _, err := jsonrpc.DecodeMessage(trimmed); err != nil {
		return jsonrpc.CodeInvalidRequest, invalid + ": " + err.Error()
	}
	return 0, ""
}

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
