package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxDetail is the largest structured detail (checkpoint or outcome) a
// task event holds, in bytes of its canonical form.
const MaxDetail = 16 << 10

// Detail is a checkpoint's or an outcome's structured detail: a JSON
// object. Its numbers are kept as written (json.Number), so that its
// canonical form, [Detail.String] (compact, keys sorted), is the same
// however the object was indented or ordered: that form is what a
// signature covers. Nil or empty is no detail.
type Detail map[string]any

// UnmarshalJSON reads a JSON object (or null), its numbers as written.
func (d *Detail) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("detail: %w", err)
	}
	*d = m
	return nil
}

// String is d's canonical form: compact JSON, keys sorted, numbers as
// written; "" for no detail.
func (d Detail) String() string {
	if len(d) == 0 {
		return ""
	}
	b, err := json.Marshal(map[string]any(d))
	if err != nil {
		return fmt.Sprintf("%q", err.Error()) // only a value set in Go can fail
	}
	return string(b)
}

// ParseDetail checks a structured detail as given by a person or a tool
// (a JSON object; empty: none). What is not one object of at most
// MaxDetail bytes (canonical) is ErrInvalid; an empty object is no
// detail.
func ParseDetail(data []byte) (Detail, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	if len(data) > 4*MaxDetail {
		return nil, invalidError{fmt.Errorf("detail: longer than %d bytes", MaxDetail)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil || v == nil {
		return nil, invalidError{errors.New("detail: not a JSON object")}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalidError{errors.New("detail: more than one JSON value")}
	}
	d := Detail(v)
	if err := d.check(); err != nil {
		return nil, invalidError{err}
	}
	if len(d) == 0 {
		return nil, nil
	}
	return d, nil
}

// check checks d's size.
func (d Detail) check() error {
	if n := len(d.String()); n > MaxDetail {
		return fmt.Errorf("detail: %d bytes, longer than %d", n, MaxDetail)
	}
	return nil
}

// checkEventDetail checks an event's detail: only a checkpoint and a done
// event have one, of at most MaxDetail bytes.
func checkEventDetail(e Event) error {
	if len(e.Detail) == 0 {
		return nil
	}
	if e.Event != EvCheckpoint && e.Event != EvDone {
		return fmt.Errorf("event %s with a detail", e.Event)
	}
	return e.Detail.check()
}
