package modelcli

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestClip(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello", 4, "h…"},
		{"héllo", 4, "h…"},
		{"hello", 2, "he"},
		{"\xff\xfe", 10, "\uFFFD"},
	}
	for _, tt := range tests {
		if got := Clip(tt.s, tt.n); got != tt.want || len(got) > max(tt.n, len(tt.want)) {
			t.Errorf("Clip(%q, %d): got %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	keys := []string{"command", "file_path"}
	tests := []struct {
		name, input, want string
	}{
		{"first key", `{"file_path":"/etc/hosts","command":"ls"}`, "ls"},
		{"next key", `{"file_path":"/etc/hosts","command":""}`, "/etc/hosts"},
		{"no key", `{"b":2,"a":1}`, `{"a":1,"b":2}`},
		{"empty", `{}`, ""},
		{"not an object", `[1]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Describe(json.RawMessage(tt.input), keys); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLastLine(t *testing.T) {
	if got, want := LastLine([]byte("first\n  last  \n\n")), "last"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestEventData(t *testing.T) {
	if got := EventData([]byte(` {"a":1} `)); string(got) != `{"a":1}` {
		t.Errorf("got %s, want the record trimmed", got)
	}
	for _, b := range []string{"", "{", `"` + strings.Repeat("x", MaxEventData) + `"`} {
		if got := EventData([]byte(b)); got != nil {
			t.Errorf("EventData(%.20q): got %.20s, want nil", b, got)
		}
	}
}

func TestEnviron(t *testing.T) {
	got := Environ([]string{"A=default"}, []string{"A=os"}, []string{"B=adapter"}, nil, []string{"C=request"})
	if want := []string{"A=default", "A=os", "B=adapter", "C=request"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCollector(t *testing.T) {
	var c Collector
	var r struct{ Type string }
	now := time.Now()
	at := func() time.Time { return now }
	if _, ok := c.Decode([]byte("   "), &r, at); ok {
		t.Error("blank line decoded")
	}
	if _, ok := c.Decode([]byte("not json"), &r, at); ok {
		t.Error("text decoded")
	}
	if line, ok := c.Decode([]byte(` {"type":"x"} `), &r, at); !ok || r.Type != "x" || string(line) != `{"type":"x"}` {
		t.Errorf("got %q, %v, %+v; want the object", line, ok, r)
	}
	if got := string(c.Other()); got != "not json" {
		t.Errorf("other: got %q", got)
	}
	c.Add(Event{Kind: EventProgress, Text: strings.Repeat("x", MaxEventText+1)})
	resp, err := c.Finish(now, "hi", false, nil)
	if err != nil || resp.Text != "hi" || resp.Truncated || len(resp.Events) != 3 ||
		resp.Events[0].Kind != EventError || resp.Events[0].Text != "not json" ||
		len(resp.Events[1].Text) > MaxEventText || resp.Events[2].Kind != EventCompleted || !resp.Events[2].Time.Equal(now) {
		t.Errorf("got %+v, %v", resp, err)
	}
	c.Cut()
	boom := errors.New("boom")
	resp, err = c.Finish(now, "hi", false, boom)
	if err != boom || resp.Text != "" || !resp.Truncated || len(resp.Events) != 3 || resp.Events[2].Kind != EventError {
		t.Errorf("got %+v, %v", resp, err)
	}
}

// TestStrayLines: each line that is not a JSON object becomes an error
// event carrying it, at most MaxStrayLine bytes of it and marked
// truncated past that; past MaxStrayLines they are counted in one event
// before the last; blank lines are nothing.
func TestStrayLines(t *testing.T) {
	long := strings.Repeat("é", MaxStrayLine) // 2 bytes a rune: twice the bound
	tests := []struct {
		name      string
		lines     []string
		wantTexts []string // of the events before the last
		wantCut   []bool
	}{
		{"none", []string{`{"type":"x"}`, "", "  "}, nil, nil},
		{"a warning", []string{"warning: deprecated flag", `{"type":"x"}`}, []string{"warning: deprecated flag"}, []bool{false}},
		{"not an object", []string{`["a"]`, `"s"`, `{"broken`}, []string{`["a"]`, `"s"`, `{"broken`}, []bool{false, false, false}},
		{"exactly the bound", []string{strings.Repeat("x", MaxStrayLine)}, []string{strings.Repeat("x", MaxStrayLine)}, []bool{false}},
		{"long", []string{long}, []string{Clip(long, MaxStrayLine)}, []bool{true}},
		{"many", slices.Repeat([]string{"noise"}, MaxStrayLines+3),
			append(slices.Repeat([]string{"noise"}, MaxStrayLines), "… 3 more lines not JSON"),
			append(slices.Repeat([]bool{false}, MaxStrayLines), false)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Collector
			var r struct{ Type string }
			at := func() time.Time { return time.Unix(1, 0) }
			for _, l := range tt.lines {
				c.Decode([]byte(l), &r, at)
			}
			for _, err := range []error{nil, errors.New("boom")} {
				resp, _ := c.Finish(time.Unix(2, 0), "hi", false, err)
				evs := resp.Events[:len(resp.Events)-1]
				var texts []string
				var cut []bool
				for _, e := range evs {
					if e.Kind != EventError || e.Time.IsZero() || len(e.Text) > MaxStrayLine {
						t.Errorf("event %+v: want a timed error within %d bytes", e, MaxStrayLine)
					}
					texts, cut = append(texts, e.Text), append(cut, e.Truncated)
				}
				if !slices.Equal(texts, tt.wantTexts) || !slices.Equal(cut, tt.wantCut) {
					t.Errorf("run error %v: events %q truncated %v, want %q %v", err, texts, cut, tt.wantTexts, tt.wantCut)
				}
			}
		})
	}
}

// FuzzDecode: a line is an object, blank, or exactly one error event
// carrying it within the bound, marked truncated exactly when cut.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"", "  ", "{}", `{"type":"x"}`, "not json", "{", "\xff\xfe", strings.Repeat("é", MaxStrayLine)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var c Collector
		var v map[string]any
		_, ok := c.Decode(line, &v, time.Now)
		blank := len(strings.TrimSpace(string(line))) == 0
		switch n := len(c.Resp.Events); {
		case ok || blank:
			if n != 0 {
				t.Fatalf("decoded or blank %q: %d events, want none", line, n)
			}
		case n != 1:
			t.Fatalf("stray %q: %d events, want 1", line, n)
		default:
			e := c.Resp.Events[0]
			text := strings.ToValidUTF8(strings.TrimSpace(string(line)), "\uFFFD")
			if e.Kind != EventError || len(e.Text) > MaxStrayLine || e.Truncated != (len(text) > MaxStrayLine) ||
				!e.Truncated && e.Text != text {
				t.Fatalf("stray %q: event %+v", line, e)
			}
		}
	})
}
