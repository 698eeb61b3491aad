package jsonobj

import (
	"encoding/json"
	"errors"
	"strings"
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

// parseSeeds are objects whose splitting by byte search could go wrong:
// escaped quotes and backslashes, nesting, spacing, duplicates, invalid
// UTF-8, and values that are not objects at all.
var parseSeeds = []string{
	`{}`, ` { } `, `{"a":1}`, "{\n\t\"a\" :\r\n \"x\" , \"b\":[1,{\"c\":\"]}\"}],\"d\":{}}\n",
	`{"q":"say \"hi\"","bs":"a\\","bq":"\\\"","k\"ey":1,"\u0041":2,"A":3}`,
	`{"a":1,"a":2}`, `{"n":-1.5e+3,"t":true,"f":false,"z":null}`,
	"{\"bad\xff\":\"x\xfey\"}", `{"s":"\u00e9\ud83d\ude00"}`,
	`null`, `[]`, `"s"`, `5`, ``, `{`, `{"a":1}x`, `{"a" 1}`,
}

// FuzzParse checks Parse against what it replaced: json.Unmarshal into a
// map of raw members.
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Parse(b)
		var want Fields
		werr := json.Unmarshal(b, &want)
		if werr == nil && want == nil {
			werr = ErrNotObject
		}
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("Parse(%q) error = %v, want %v", b, err, werr)
		}
		if err != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("Parse(%q) = %q, want %q", b, got, want)
		}
		for k, v := range want {
			if string(got[k]) != string(v) {
				t.Fatalf("Parse(%q)[%q] = %s, want %s", b, k, got[k], v)
			}
		}
	})
}

// TestTakeFastPaths checks that Take's shortcuts (a string copied out, an
// Unmarshaler given the raw member) decode as json.Unmarshal does.
func TestTakeFastPaths(t *testing.T) {
	f, err := Parse([]byte(`{"plain":"abc","esc":"a\"b\\c\n","bad":"x` + "\xff" + `y","num":5,"raw":{"k":[1, 2]},"obj":"not one"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"plain", "esc", "bad"} {
		var got, want string
		if err := json.Unmarshal(f[key], &want); err != nil {
			t.Fatal(err)
		}
		if err := f.Take(key, &got); err != nil || got != want {
			t.Errorf("Take(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
	s := "keep"
	if err := f.Take("num", &s); err == nil {
		t.Errorf("Take of a number into a string = %q, no error", s)
	}
	var raw json.RawMessage
	if err := f.Take("raw", &raw); err != nil || string(raw) != `{"k":[1, 2]}` {
		t.Errorf("Take raw = %s, %v", raw, err)
	}
	called := false
	err = f.TakeObject("obj", func(Fields) error { called = true; return nil })
	if err == nil || called || !strings.Contains(err.Error(), `"obj"`) {
		t.Errorf("TakeObject of a string: err = %v, fn called = %v; want an error naming the key", err, called)
	}
	if f.Rest() != nil {
		t.Errorf("Rest = %v, want nil", f.Rest())
	}
}

// TestRawAsField checks that Raw writes another Writer's object as Field
// would have.
func TestRawAsField(t *testing.T) {
	var inner Writer
	inner.Field("t", "<a>\u2028")
	inner.Extra(map[string]json.RawMessage{"x": json.RawMessage(" [1, {\"y\" : 2}] ")})
	b, err := inner.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	var viaField, viaRaw Writer
	viaField.Field("a", 1)
	viaField.Field("c", json.RawMessage(b))
	viaRaw.Field("a", 1)
	viaRaw.Raw("c", b)
	want, _ := viaField.Bytes()
	got, _ := viaRaw.Bytes()
	if string(got) != string(want) {
		t.Errorf("Raw wrote %s, Field %s", got, want)
	}
}
