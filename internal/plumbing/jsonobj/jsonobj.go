// Package jsonobj writes JSON objects whose members keep the order they are
// added in, with unknown members appended sorted by name: the shape of
// collab's message and presence files, so a round trip keeps fields in place.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"maps"
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
