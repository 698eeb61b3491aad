package web

import (
	"errors"
	"io"
	"strings"
)

// Server-sent events: the one framing of every event stream the server
// writes (a channel's messages, a job's events; the API's JSON and the
// page's HTML alike).
//
// In the event stream format CR, LF and CRLF each end a line, and a line
// is a field: "data:", "id:", "event:", "retry:", or a comment. Text from
// outside (a message anyone in the tree can write, a model's output in a
// job's events) must not end a line of its own, or it adds fields: an "id"
// the client sends back as Last-Event-ID on its next connection, a "retry"
// that keeps it from reconnecting for days, whole events. So writeEvent
// splits data at every line break into data fields (the client joins them
// with LF: a CR or CRLF in data arrives as LF), and refuses an id or event
// type that holds a line break or NUL. It writes valid UTF-8 (an invalid
// sequence as U+FFFD, which is how a client decodes it), so what is framed
// is what the client reads.

// errEventField is writeEvent's refusal of an id or event type that would
// end its line early.
var errEventField = errors.New("web: line break or NUL in an event's id or type")

// writeEvent writes one event of type event (none: "message", the
// client's default), id (none when "") and data, then flushes nothing:
// the stream does. Every line of data (split at CR, LF and CRLF) is its own
// data field.
func writeEvent(w io.Writer, event, id string, data []byte) error {
	b, err := appendEvent(nil, event, id, data)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// appendEvent appends the event writeEvent writes to b.
func appendEvent(b []byte, event, id string, data []byte) ([]byte, error) {
	if !fieldSafe(event) || !fieldSafe(id) {
		return b, errEventField
	}
	if event != "" {
		b = append(append(append(b, "event: "...), strings.ToValidUTF8(event, "\uFFFD")...), '\n')
	}
	if id != "" {
		b = append(append(append(b, "id: "...), strings.ToValidUTF8(id, "\uFFFD")...), '\n')
	}
	rest := strings.ToValidUTF8(string(data), "\uFFFD")
	for {
		i := strings.IndexAny(rest, "\r\n")
		if i < 0 {
			break
		}
		b = append(append(append(b, "data: "...), rest[:i]...), '\n')
		if rest[i] == '\r' && i+1 < len(rest) && rest[i+1] == '\n' {
			i++
		}
		rest = rest[i+1:]
	}
	b = append(append(append(b, "data: "...), rest...), '\n')
	return append(b, '\n'), nil
}

// writeComment writes a comment line (": text"), which clients ignore: the
// stream's first words and its keep-alives. Line breaks in text are
// dropped.
func writeComment(w io.Writer, text string) error {
	text = strings.NewReplacer("\r", "", "\n", "").Replace(text)
	_, err := io.WriteString(w, ": "+text+"\n\n")
	return err
}

// fieldSafe reports whether s can be a field's value on one line.
func fieldSafe(s string) bool { return !strings.ContainsAny(s, "\r\n\x00") }
