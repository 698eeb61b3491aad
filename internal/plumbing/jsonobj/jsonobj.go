// Package jsonobj reads and writes the JSON objects of collab's files
// (messages, presence, registry entries) so that a round trip loses
// nothing: [Writer] writes members in the order they are added, with
// unknown members appended sorted by name; [Fields] reads known members out
// one by one and keeps the rest verbatim.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// Writer builds one object. The zero value is ready; the first error sticks.
type Writer struct {
	buf bytes.Buffer
	err error
}

// Field adds a member. HTML characters are not escaped.
func (w *Writer) Field(key string, v any) {
	if w.err != nil {
		return
	}
	if w.buf.Len() == 0 {
		w.buf.WriteByte('{')
	} else {
		w.buf.WriteByte(',')
	}
	k, _ := json.Marshal(key)
	w.buf.Write(k)
	w.buf.WriteByte(':')
	enc := json.NewEncoder(&w.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.err = err
		return
	}
	w.buf.Truncate(w.buf.Len() - 1) // Encode's newline
}

// Extra adds the members of m sorted by name, skipping any whose name is in
// known (so an unknown member can never overwrite a known one).
func (w *Writer) Extra(m map[string]json.RawMessage, known ...string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(known, k) {
			w.Field(k, m[k])
		}
	}
}

// Bytes closes the object and returns it.
func (w *Writer) Bytes() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.buf.Len() == 0 {
		return []byte("{}"), nil
	}
	w.buf.WriteByte('}')
	return w.buf.Bytes(), nil
}

// ErrNotObject is returned by [Parse] for valid JSON that is not an object.
var ErrNotObject = errors.New("jsonobj: not an object")

// Fields is the reading half: a JSON object's members by name, taken out
// one by one into their typed fields, so what is left over is the object's
// unknown members, kept verbatim.
type Fields map[string]json.RawMessage

// Parse splits b, a JSON object, into its members.
func Parse(b []byte) (Fields, error) {
	var f Fields
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	if f == nil {
		return nil, ErrNotObject
	}
	return f, nil
}

// Take decodes member key into dst and removes it. A missing member or a
// null leaves dst alone; a value of the wrong type is an error naming key.
func (f Fields) Take(key string, dst any) error {
	v, ok := f[key]
	if !ok {
		return nil
	}
	delete(f, key)
	if string(v) == "null" {
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return fmt.Errorf("%q: %w", key, err)
	}
	return nil
}

// Lenient is Take for an optional member: a value of the wrong type is
// dropped and dst is left at its zero value, so one foreign writer's odd
// field does not make a whole file unreadable. dst must be a pointer.
func (f Fields) Lenient(key string, dst any) {
	if err := f.Take(key, dst); err != nil {
		reflect.ValueOf(dst).Elem().SetZero()
	}
}

// Rest returns the members not taken, or nil if there are none.
func (f Fields) Rest() map[string]json.RawMessage {
	if len(f) == 0 {
		return nil
	}
	return f
}
