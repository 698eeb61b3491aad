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

// ParseDetail checks a structured detail as given by a person or a tool
// (a JSON object; empty: none) and returns it in its canonical form:
// compact, keys sorted, numbers as written. What is not an object of at
// most MaxDetail bytes is ErrInvalid.
func ParseDetail(data []byte) (json.RawMessage, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	c, err := canonicalDetail(data)
	if err != nil {
		return nil, invalidError{fmt.Errorf("detail: %w", err)}
	}
	return c, nil
}

// canonicalDetail returns the canonical form of a JSON object: what a
// signature covers, so that an event re-indented on disk (MarshalIndent)
// or escaped otherwise still verifies.
func canonicalDetail(data []byte) (json.RawMessage, error) {
	if len(data) > 4*MaxDetail {
		return nil, fmt.Errorf("longer than %d bytes", MaxDetail)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, errors.New("not a JSON object")
	}
	if v == nil {
		return nil, errors.New("not a JSON object (null)")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(out) > MaxDetail {
		return nil, fmt.Errorf("longer than %d bytes", MaxDetail)
	}
	return out, nil
}

// signedDetail is e's detail as its signature covers it: canonical, or
// the bytes as they are when they do not parse (such an event does not
// decode anyway).
func signedDetail(d json.RawMessage) string {
	c, err := canonicalDetail(d)
	if err != nil {
		return string(d)
	}
	return string(c)
}

// checkEventDetail checks an event's detail: only a checkpoint and a done
// event have one, a JSON object of at most MaxDetail bytes.
func checkEventDetail(e Event) error {
	if len(e.Detail) == 0 {
		return nil
	}
	if e.Event != EvCheckpoint && e.Event != EvDone {
		return fmt.Errorf("event %s with a detail", e.Event)
	}
	if _, err := canonicalDetail(e.Detail); err != nil {
		return fmt.Errorf("detail: %w", err)
	}
	return nil
}
