package jsonobj

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestFields(t *testing.T) {
	f, err := Parse([]byte(`{"a":"x","b":7,"c":null,"d":"not a number","z":{"k":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	var a string
	b, c, d := 0, "keep", 5
	if err := f.Take("a", &a); err != nil || a != "x" {
		t.Errorf("Take a = %q, %v", a, err)
	}
	if err := f.Take("b", &b); err != nil || b != 7 {
		t.Errorf("Take b = %d, %v", b, err)
	}
	if err := f.Take("c", &c); err != nil || c != "keep" {
		t.Errorf("Take null c = %q, %v; want dst left alone", c, err)
	}
	f.Lenient("d", &d)
	if d != 0 {
		t.Errorf("Lenient d = %d, want 0 for a string", d)
	}
	if err := f.Take("missing", &a); err != nil || a != "x" {
		t.Errorf("Take missing = %q, %v", a, err)
	}
	rest := f.Rest()
	if len(rest) != 1 || string(rest["z"]) != `{"k":1}` {
		t.Errorf("Rest = %v, want only z verbatim", rest)
	}

	g, _ := Parse([]byte(`{"n":"seven"}`))
	var n int
	if err := g.Take("n", &n); err == nil {
		t.Error("Take of a string into an int: no error")
	}
	if g.Rest() != nil {
		t.Errorf("Rest after every member taken = %v, want nil", g.Rest())
	}
	for _, in := range []string{`[]`, `null`, `"s"`} {
		if _, err := Parse([]byte(in)); !errors.Is(err, ErrNotObject) && err == nil {
			t.Errorf("Parse(%s): no error", in)
		}
	}
	if _, err := Parse([]byte(`null`)); !errors.Is(err, ErrNotObject) {
		t.Errorf("Parse(null) = %v, want ErrNotObject", err)
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var w Writer
	w.Field("b", 1)
	w.Field("a", "<x>")
	w.Extra(map[string]json.RawMessage{"a": json.RawMessage(`"dup"`), "z": json.RawMessage(`2`), "c": json.RawMessage(`true`)}, "a")
	got, err := w.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"b":1,"a":"<x>","c":true,"z":2}`; string(got) != want {
		t.Errorf("Bytes = %s, want %s", got, want)
	}
}
