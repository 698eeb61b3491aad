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
	if _, ok := c.Decode([]byte("   "), &r); ok {
		t.Error("blank line decoded")
	}
	if _, ok := c.Decode([]byte("not json"), &r); ok {
		t.Error("text decoded")
	}
	if line, ok := c.Decode([]byte(` {"type":"x"} `), &r); !ok || r.Type != "x" || string(line) != `{"type":"x"}` {
		t.Errorf("got %q, %v, %+v; want the object", line, ok, r)
	}
	if got := string(c.Other()); got != "not json" {
		t.Errorf("other: got %q", got)
	}
	c.Add(Event{Kind: EventProgress, Text: strings.Repeat("x", MaxEventText+1)})
	now := time.Now()
	resp, err := c.Finish(now, "hi", false, nil)
	if err != nil || resp.Text != "hi" || resp.Truncated || len(resp.Events) != 2 ||
		len(resp.Events[0].Text) > MaxEventText || resp.Events[1].Kind != EventCompleted || !resp.Events[1].Time.Equal(now) {
		t.Errorf("got %+v, %v", resp, err)
	}
	c.Cut()
	boom := errors.New("boom")
	resp, err = c.Finish(now, "hi", false, boom)
	if err != boom || resp.Text != "" || !resp.Truncated || len(resp.Events) != 2 || resp.Events[1].Kind != EventError {
		t.Errorf("got %+v, %v", resp, err)
	}
}
