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
	"unicode/utf8"
)

// Writer builds one object. The zero value is ready; the first error sticks.
type Writer struct {
	buf bytes.Buffer
	err error
}

// Field adds a member. HTML characters are not escaped.
func (w *Writer) Field(key string, v any) {
	if !w.member(key) {
		return
	}
	enc := json.NewEncoder(&w.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		w.err = err
		return
	}
	w.buf.Truncate(w.buf.Len() - 1) // Encode's newline
}

// Raw adds a member whose value is b as is: what another Writer's Bytes
// returned, valid and compact already. Field would scan it again (an
// encoding/json Marshaler's output is checked and compacted), which for a
// message's 1 MB content is most of the cost of encoding it.
func (w *Writer) Raw(key string, b []byte) {
	if w.member(key) {
		w.buf.Write(b)
	}
}

// member writes what comes before a member's value: the brace or comma,
// the key and the colon. It reports false after an error.
func (w *Writer) member(key string) bool {
	if w.err != nil {
		return false
	}
	if w.buf.Len() == 0 {
		w.buf.WriteByte('{')
	} else {
		w.buf.WriteByte(',')
	}
	k, _ := json.Marshal(key)
	w.buf.Write(k)
	w.buf.WriteByte(':')
	return true
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
//
// b is scanned once to be validated, then split by a plain byte search, so
// that a message of 1 MB costs one pass of encoding/json's scanner, not a
// pass for every level it is decoded at. The members are copies.
func Parse(b []byte) (Fields, error) {
	if !json.Valid(b) {
		var f Fields
		return nil, json.Unmarshal(b, &f) // its error
	}
	return split(b, true)
}

// split is Parse for b already known valid. The members are copies when
// clone is set, else slices of b.
func split(b []byte, clone bool) (Fields, error) {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		var f Fields
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, err
		}
		if f == nil {
			return nil, ErrNotObject
		}
		return f, nil
	}
	f := Fields{}
	i = skipSpace(b, i+1)
	for b[i] != '}' {
		end := stringEnd(b, i)
		key := b[i:end]
		var k string
		if s, ok := plainString(key); ok {
			k = s
		} else if err := json.Unmarshal(key, &k); err != nil {
			return nil, err
		}
		i = skipSpace(b, skipSpace(b, end)+1) // past ':'
		end = valueEnd(b, i)
		v := b[i:end:end]
		if clone {
			v = bytes.Clone(v)
		}
		f[k] = v // the last of duplicates wins, as in json
		i = skipSpace(b, end)
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return f, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the string that starts at b[i], in
// valid JSON: the first quote not escaped, that is, not after an odd run
// of backslashes.
func stringEnd(b []byte, i int) int {
	j := i + 1
	for {
		j += bytes.IndexByte(b[j:], '"')
		n := 0
		for b[j-1-n] == '\\' {
			n++
		}
		j++
		if n%2 == 0 {
			return j
		}
	}
}

// valueEnd returns the index after the value that starts at b[i], in valid
// JSON.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(b[i])) {
		i++
	}
	return i
}

// TakeObject is Take for a member that is an object, read by fn from its
// members. The member, validated by Parse, is split without being scanned
// again. A missing member or a null does not call fn; a value that is not
// an object is an error naming key.
func (f Fields) TakeObject(key string, fn func(Fields) error) error {
	v, ok := f[key]
	if !ok {
		return nil
	}
	delete(f, key)
	if string(v) == "null" {
		return nil
	}
	sub, err := split(v, false) // v is f's own copy
	if err == nil {
		err = fn(sub)
	}
	if err != nil {
		return fmt.Errorf("%q: %w", key, err)
	}
	return nil
}

// Take decodes member key into dst and removes it. A missing member or a
// null leaves dst alone; a value of the wrong type is an error naming key.
//
// Parse has validated every member, so a large value is not scanned again
// to be validated: a [json.Unmarshaler] gets it as is, and a string
// without escapes is copied out.
func (f Fields) Take(key string, dst any) error {
	v, ok := f[key]
	if !ok {
		return nil
	}
	delete(f, key)
	if string(v) == "null" {
		return nil
	}
	var err error
	switch d := dst.(type) {
	case *string:
		if s, ok := plainString(v); ok {
			*d = s
			return nil
		}
		err = json.Unmarshal(v, dst)
	case json.Unmarshaler:
		err = d.UnmarshalJSON(v)
	default:
		err = json.Unmarshal(v, dst)
	}
	if err != nil {
		return fmt.Errorf("%q: %w", key, err)
	}
	return nil
}

// plainString returns the string a valid JSON value stands for when it is
// a string that json.Unmarshal would copy unchanged: no escapes, valid
// UTF-8.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
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
