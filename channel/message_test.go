package channel_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

const seedFile = "msg-20260111-163315-claude-4c78.json"

// seedMessage is docs/protocol.md#messages's example.
const seedMessage = `{
  "id": "msg-20260111-163315-claude-4c78",
  "timestamp": "2026-01-11T16:33:15.123Z",
  "session_id": "agent-os-paper",
  "from": "claude",
  "to": "codex",
  "type": "chat",
  "content": {"text": "hello", "code": null, "artifacts": []},
  "metadata": {"mode": "chat", "turn": "claude", "in_reply_to": null}
}`

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		file    string
		channel string
		want    channel.Message // compared field by field below; zero: malformed
	}{
		{
			name: "seed example", data: seedMessage, file: seedFile, channel: "elsewhere",
			want: channel.Message{
				ID: "msg-20260111-163315-claude-4c78", Timestamp: "2026-01-11T16:33:15.123Z",
				SessionID: "agent-os-paper", From: "claude", To: "codex", Type: "chat",
				Content:  channel.Content{Text: "hello", Artifacts: []json.RawMessage{}},
				Metadata: channel.Metadata{Mode: "chat", Turn: "claude"},
			},
		},
		{
			name: "minimal: defaults from file name and folder", data: `{"from":"qc-1","content":{"text":"hi"}}`,
			file: "msg-20260111-163315-qc-1-00ff.json", channel: "general",
			want: channel.Message{
				ID: "msg-20260111-163315-qc-1-00ff", Timestamp: "2026-01-11T16:33:15.000Z",
				SessionID: "general", From: "qc-1", To: "all", Type: "chat",
				Content: channel.Content{Text: "hi"},
			},
		},
		{
			name: "minimal without a file name", data: `{"from":"a","content":{"text":"hi"}}`,
			want: channel.Message{From: "a", To: "all", Type: "chat", Content: channel.Content{Text: "hi"}},
		},
		{
			name: "null fields take defaults", file: seedFile, channel: "general",
			data: `{"id":null,"timestamp":null,"session_id":null,"from":"a","to":null,"type":null,"content":{"text":"hi"},"metadata":null}`,
			want: channel.Message{
				ID: "msg-20260111-163315-claude-4c78", Timestamp: "2026-01-11T16:33:15.000Z",
				SessionID: "general", From: "a", To: "all", Type: "chat", Content: channel.Content{Text: "hi"},
			},
		},
		{
			name: "empty strings take defaults", file: seedFile, channel: "general",
			data: `{"id":"","timestamp":"","session_id":"","from":"a","to":"","type":"","content":{"text":"hi"}}`,
			want: channel.Message{
				ID: "msg-20260111-163315-claude-4c78", Timestamp: "2026-01-11T16:33:15.000Z",
				SessionID: "general", From: "a", To: "all", Type: "chat", Content: channel.Content{Text: "hi"},
			},
		},
		{
			name: "empty text is present", data: `{"from":"a","content":{"text":""}}`,
			want: channel.Message{From: "a", To: "all", Type: "chat"},
		},
		{
			name: "collab metadata", data: `{"from":"a","content":{"text":"t","code":"x := 1"},"metadata":{"in_reply_to":"msg-1","hops":2,"thread":"msg-0","host":"vm-2"}}`,
			want: channel.Message{
				From: "a", To: "all", Type: "chat",
				Content:  channel.Content{Text: "t", Code: ptr("x := 1")},
				Metadata: channel.Metadata{InReplyTo: "msg-1", Hops: 2, Thread: "msg-0", Host: "vm-2"},
			},
		},
		{name: "hops as float", data: `{"from":"a","content":{"text":"t"},"metadata":{"hops":3.0}}`,
			want: channel.Message{From: "a", To: "all", Type: "chat", Content: channel.Content{Text: "t"}, Metadata: channel.Metadata{Hops: 3}}},
		{name: "hops as string", data: `{"from":"a","content":{"text":"t"},"metadata":{"hops":"4"}}`,
			want: channel.Message{From: "a", To: "all", Type: "chat", Content: channel.Content{Text: "t"}, Metadata: channel.Metadata{Hops: 4}}},
		{name: "negative hops", data: `{"from":"a","content":{"text":"t"},"metadata":{"hops":-1}}`,
			want: channel.Message{From: "a", To: "all", Type: "chat", Content: channel.Content{Text: "t"}}},
		{name: "huge hops", data: `{"from":"a","content":{"text":"t"},"metadata":{"hops":1e300}}`,
			want: channel.Message{From: "a", To: "all", Type: "chat", Content: channel.Content{Text: "t"}}},
		{name: "leading BOM-less whitespace", data: "\n\t {\"from\":\"a\",\"content\":{\"text\":\"t\"}} \n",
			want: channel.Message{From: "a", To: "all", Type: "chat", Content: channel.Content{Text: "t"}}},

		{name: "empty file", data: ``},
		{name: "whitespace", data: "  \n"},
		{name: "not JSON", data: `hello`},
		{name: "null", data: `null`},
		{name: "array", data: `[{"from":"a","content":{"text":"t"}}]`},
		{name: "string", data: `"from"`},
		{name: "truncated", data: `{"from":"a","content":{"text":"t"`},
		{name: "trailing garbage", data: `{"from":"a","content":{"text":"t"}} x`},
		{name: "two objects", data: `{"from":"a","content":{"text":"t"}}{}`},
		{name: "no from", data: `{"content":{"text":"t"}}`},
		{name: "empty from", data: `{"from":"","content":{"text":"t"}}`},
		{name: "null from", data: `{"from":null,"content":{"text":"t"}}`},
		{name: "numeric from", data: `{"from":7,"content":{"text":"t"}}`},
		{name: "no content", data: `{"from":"a"}`},
		{name: "null content", data: `{"from":"a","content":null}`},
		{name: "content is a string", data: `{"from":"a","content":"t"}`},
		{name: "no text", data: `{"from":"a","content":{}}`},
		{name: "null text", data: `{"from":"a","content":{"text":null}}`},
		{name: "numeric text", data: `{"from":"a","content":{"text":1}}`},
		// The required fields are matched exactly, as every other field is:
		// encoding/json's case-insensitive struct matching must not count
		// "Content" or "TEXT" as content.text.
		{name: "text under an upper-case key", data: `{"from":"a","content":{"TEXT":"t"}}`},
		{name: "content under an upper-case key", data: `{"from":"a","Content":{"text":"t"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := channel.Decode([]byte(tt.data), tt.file, tt.channel)
			if tt.want.From == "" {
				if !errors.Is(err, channel.ErrMalformed) {
					t.Fatalf("Decode = %+v, %v; want an error wrapping ErrMalformed", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			tt.want.File = tt.file
			// Compare everything but the Extra maps, which have their own tests.
			got.Extra, got.Content.Extra, got.Metadata.Extra = nil, nil, nil
			if len(got.Content.Artifacts) == 0 && len(tt.want.Content.Artifacts) == 0 {
				got.Content.Artifacts, tt.want.Content.Artifacts = nil, nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestDecodeLenient: docs/protocol.md#messages makes a file malformed only when it is not
// JSON, is too large, or lacks "from" or "content.text". An optional field
// of an unexpected type, as a foreign writer might produce (an epoch
// timestamp, a list of recipients, "hops":"two"), must not lose the whole
// message: the field takes its default.
func TestDecodeLenient(t *testing.T) {
	tests := []struct {
		name  string
		field string // a member of the object {"from":"a","content":{"text":"t", ...}, ...}
		check func(m channel.Message) bool
	}{
		{"epoch timestamp", `"timestamp":1768149195`, func(m channel.Message) bool { return m.Timestamp == "2026-01-11T16:33:15.000Z" }},
		{"numeric id", `"id":7`, func(m channel.Message) bool { return m.ID == "msg-20260111-163315-claude-4c78" }},
		{"list of recipients", `"to":["codex","gemini"]`, func(m channel.Message) bool { return m.To == "all" }},
		{"numeric type", `"type":3`, func(m channel.Message) bool { return m.Type == "chat" }},
		{"object session_id", `"session_id":{}`, func(m channel.Message) bool { return m.SessionID == "general" }},
		{"metadata is an array", `"metadata":[]`, func(m channel.Message) bool { return m.Metadata.Hops == 0 }},
		{"hops is a word", `"metadata":{"hops":"two","host":"vm-2"}`, func(m channel.Message) bool { return m.Metadata.Hops == 0 && m.Metadata.Host == "vm-2" }},
		{"hops is a bool", `"metadata":{"hops":true}`, func(m channel.Message) bool { return m.Metadata.Hops == 0 }},
		{"in_reply_to is a number", `"metadata":{"in_reply_to":5}`, func(m channel.Message) bool { return m.Metadata.InReplyTo == "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := `{"from":"a","content":{"text":"t"},` + tt.field + `}`
			m, err := channel.Decode([]byte(data), seedFile, "general")
			if err != nil {
				t.Fatalf("Decode(%s) = %v; want the message, with the odd field at its default", data, err)
			}
			if m.From != "a" || m.Content.Text != "t" || !tt.check(m) {
				t.Errorf("Decode(%s) = %+v", data, m)
			}
		})
	}
	for _, tt := range []struct{ name, data string }{
		{"code is an object", `{"from":"a","content":{"text":"t","code":{"lang":"go"}}}`},
		{"artifacts is an object", `{"from":"a","content":{"text":"t","artifacts":{}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := channel.Decode([]byte(tt.data), "", "")
			if err != nil || m.Content.Text != "t" {
				t.Fatalf("Decode(%s) = %+v, %v; want the message", tt.data, m, err)
			}
		})
	}
}

// TestEncodeKeepsHTML: collab writes <, > and & as they are (object.field
// sets SetEscapeHTML(false)), so a message file with code in it stays
// readable with cat and grep.
func TestEncodeKeepsHTML(t *testing.T) {
	code := "if a < b && c > d {}"
	m := channel.Message{From: "a", Content: channel.Content{Text: "<b>bold</b> & more", Code: &code}}
	out, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"<b>bold</b> & more"`, `"if a < b && c > d {}"`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("Encode = %s\nwant it to contain %s", out, want)
		}
	}
}

// TestMessageTime: Time prefers the timestamp, then the file name.
func TestMessageTime(t *testing.T) {
	tests := []struct {
		name string
		m    channel.Message
		want time.Time
	}{
		{"timestamp", channel.Message{Timestamp: "2026-01-11T16:33:15.123Z", File: seedFile},
			time.Date(2026, 1, 11, 16, 33, 15, 123e6, time.UTC)},
		{"timestamp with offset", channel.Message{Timestamp: "2026-01-11T18:33:15+02:00"},
			time.Date(2026, 1, 11, 16, 33, 15, 0, time.UTC)},
		{"bad timestamp: file name", channel.Message{Timestamp: "yesterday", File: seedFile},
			time.Date(2026, 1, 11, 16, 33, 15, 0, time.UTC)},
		{"bad timestamp: id", channel.Message{Timestamp: "yesterday", ID: "msg-20260111-163316-claude-4c78"},
			time.Date(2026, 1, 11, 16, 33, 16, 0, time.UTC)},
		{"nothing", channel.Message{}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.Time(); !got.Equal(tt.want) {
				t.Errorf("Time() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestThreadID(t *testing.T) {
	tests := []struct {
		name string
		md   channel.Metadata
		want string
	}{
		{"first of a chain", channel.Metadata{}, "msg-self"},
		{"reply without thread", channel.Metadata{InReplyTo: "msg-parent"}, "msg-parent"},
		{"thread wins", channel.Metadata{InReplyTo: "msg-parent", Thread: "msg-root"}, "msg-root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := channel.Message{ID: "msg-self", Metadata: tt.md}
			if got := m.ThreadID(); got != tt.want {
				t.Errorf("ThreadID() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestUnknownFieldsRoundTrip: unknown fields at the top level, in content
// and in metadata survive Decode, Encode, Decode (docs/protocol.md#messages).
func TestUnknownFieldsRoundTrip(t *testing.T) {
	const in = `{
	  "id": "msg-20260111-163315-claude-4c78",
	  "timestamp": "2026-01-11T16:33:15.123Z",
	  "session_id": "agent-os-paper",
	  "from": "claude",
	  "to": "codex",
	  "type": "chat",
	  "priority": "high",
	  "x-trace": {"span": [1, 2.5, "three", null, true], "nested": {"deep": {}}},
	  "zz_null": null,
	  "content": {
	    "text": "see <b>this</b> & that \u2028 ünïcødé",
	    "code": "fmt.Println(1)",
	    "artifacts": [{"path": "a.txt", "sha": "00"}, "b.txt"],
	    "lang": "go",
	    "lines": 1e3
	  },
	  "metadata": {
	    "mode": "review",
	    "turn": "codex",
	    "in_reply_to": "msg-20260111-163300-codex-0001",
	    "hops": 2,
	    "thread": "msg-20260111-163000-codex-0000",
	    "host": "vm-2",
	    "labels": ["a", "b"],
	    "score": -0.5,
	    "empty": {}
	  }
	}`
	m1, err := channel.Decode([]byte(in), seedFile, "agent-os-paper")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		where string
		extra map[string]json.RawMessage
		keys  []string
	}{
		{"top level", m1.Extra, []string{"priority", "x-trace", "zz_null"}},
		{"content", m1.Content.Extra, []string{"lang", "lines"}},
		{"metadata", m1.Metadata.Extra, []string{"labels", "score", "empty"}},
	} {
		for _, k := range c.keys {
			if _, ok := c.extra[k]; !ok {
				t.Errorf("Decode dropped %s field %q", c.where, k)
			}
		}
	}
	out, err := m1.Encode()
	if err != nil {
		t.Fatal(err)
	}
	m2, err := channel.Decode(out, seedFile, "agent-os-paper")
	if err != nil {
		t.Fatalf("Decode(Encode(m)): %v\n%s", err, out)
	}
	// Semantically the same document: compare as generic JSON.
	if got, want := generic(t, out), generic(t, []byte(in)); !reflect.DeepEqual(got, want) {
		t.Errorf("Encode changed the document:\ngot  %v\nwant %v", got, want)
	}
	out2, err := m2.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, out2) {
		t.Errorf("Encode is not stable across a round trip:\n%s\n%s", out, out2)
	}
}

// TestEncodeSeedSchema: Encode writes every field of the seed schema, so a
// seed-era reader finds what it expects.
func TestEncodeSeedSchema(t *testing.T) {
	m := channel.Message{From: "a", Content: channel.Content{Text: "t"}}
	out, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got := generic(t, out).(map[string]any)
	for _, k := range []string{"id", "timestamp", "session_id", "from", "to", "type", "content", "metadata"} {
		if _, ok := got[k]; !ok {
			t.Errorf("Encode has no %q: %s", k, out)
		}
	}
	content := got["content"].(map[string]any)
	for _, k := range []string{"text", "code", "artifacts"} {
		if _, ok := content[k]; !ok {
			t.Errorf("Encode has no content.%q: %s", k, out)
		}
	}
	if a, ok := content["artifacts"].([]any); !ok || len(a) != 0 {
		t.Errorf("content.artifacts = %v, want []", content["artifacts"])
	}
	md := got["metadata"].(map[string]any)
	for _, k := range []string{"mode", "turn", "in_reply_to"} {
		if _, ok := md[k]; !ok {
			t.Errorf("Encode has no metadata.%q: %s", k, out)
		}
	}
	if md["in_reply_to"] != nil {
		t.Errorf("metadata.in_reply_to = %v, want null", md["in_reply_to"])
	}
}

func generic(t testing.TB, data []byte) any {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	return normalizeNumbers(v)
}

// normalizeNumbers turns json.Numbers into float64 so that 1e3 and 1000
// compare equal.
func normalizeNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = normalizeNumbers(e)
		}
	}
	return v
}

var decodeSeeds = []string{
	seedMessage,
	`{"from":"a","content":{"text":"t"}}`,
	`{"from":"a","content":{"text":""},"x":1,"metadata":{"hops":"2","y":[]}}`,
	`{"from":"a","content":{"text":"t","code":null,"artifacts":[1,{"a":"b"}],"z":{}}}`,
	`{"from":"a","content":{"text":"t"},"metadata":{"hops":1e400}}`,
	`{"from":"a","content":{"text":"t"},"From":"b","FROM":"c"}`,
	`{"from":"a","from":"b","content":{"text":"t"}}`,
	`{"from":"\ud800","content":{"text":"\u0000"}}`,
	"{\"from\":\"a\",\"content\":{\"text\":\"\xff\"},\"k\xfe\":\"\xfd\"}",
	`{"from":"a","content":{"text":"t"},"metadata":null}`,
	`null`, `[]`, `{}`, ``, `{"from":"a","content":{"text":"t"`,
	`{"from":{"text":"t"},"content":"a"}`,
}

// FuzzDecode: Decode never panics; what it accepts has the required fields
// and defaults, encodes, and survives Decode(Encode(m)) unchanged.
func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s), seedFile, "general")
		f.Add([]byte(s), "", "")
	}
	f.Fuzz(func(t *testing.T, data []byte, file, ch string) {
		if ch != "" && !tree.ValidName(ch) {
			t.Skip() // readers only pass checked channel names
		}
		m, err := channel.Decode(data, file, ch)
		if err != nil {
			if !errors.Is(err, channel.ErrMalformed) {
				t.Fatalf("Decode error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if m.From == "" || m.To == "" || m.Type == "" {
			t.Fatalf("Decode accepted a message without from, to or type: %+v", m)
		}
		if !hasExactText(data) {
			t.Fatalf("Decode accepted %q, which has no string content.text", data)
		}
		if m.File != file {
			t.Fatalf("File = %q, want %q", m.File, file)
		}
		if !json.Valid(data) {
			t.Fatalf("Decode accepted invalid JSON %q", data)
		}
		out, err := m.Encode()
		if err != nil {
			t.Fatalf("Encode of a decoded message: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("Encode wrote invalid JSON: %s", out)
		}
		m2, err := channel.Decode(out, file, ch)
		if err != nil {
			t.Fatalf("Decode(Encode(m)): %v\n%s", err, out)
		}
		out2, err := m2.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("Encode(Decode(Encode(m))) != Encode(m):\n%s\n%s", out, out2)
		}
		if !reflect.DeepEqual(generic(t, out), generic(t, out2)) {
			t.Fatalf("round trip changed the document")
		}
		if m2.From != m.From || m2.Content.Text != m.Content.Text || m2.To != m.To {
			t.Fatalf("round trip changed from/to/text: %+v -> %+v", m, m2)
		}
	})
}

// FuzzEncodeText: any text and metadata a writer sets survives Encode and
// Decode.
func FuzzEncodeText(f *testing.F) {
	f.Add("hello", "", "vm-2", 0, "")
	f.Add("<b>&</b>\u2028\n\t\"\\", "code", "", 3, "msg-x")
	f.Add("", "", "", -1, "")
	f.Fuzz(func(t *testing.T, text, code, host string, hops int, reply string) {
		m := channel.Message{From: "a", Content: channel.Content{Text: text}}
		if code != "" {
			m.Content.Code = &code
		}
		m.Metadata.Host, m.Metadata.Hops, m.Metadata.InReplyTo = host, hops, reply
		out, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := channel.Decode(out, "", "")
		if err != nil {
			t.Fatalf("Decode(Encode(m)): %v\n%s", err, out)
		}
		// encoding/json turns invalid UTF-8 into U+FFFD; compare what JSON
		// can carry.
		if want := jsonString(text); got.Content.Text != want {
			t.Errorf("text = %q, want %q", got.Content.Text, want)
		}
		if want := jsonString(host); got.Metadata.Host != want {
			t.Errorf("host = %q, want %q", got.Metadata.Host, want)
		}
		if want := max(hops, 0); hops < 1<<31 && got.Metadata.Hops != want {
			t.Errorf("hops = %d, want %d", got.Metadata.Hops, want)
		}
	})
}

// jsonString is s as it comes back from a trip through JSON.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	var out string
	json.Unmarshal(b, &out)
	return out
}

// hasExactText reports whether data is an object with a string
// "content"."text", keys matched exactly.
func hasExactText(data []byte) bool {
	var top map[string]json.RawMessage
	var content map[string]json.RawMessage
	var text *string
	return json.Unmarshal(data, &top) == nil &&
		json.Unmarshal(top["content"], &content) == nil &&
		json.Unmarshal(content["text"], &text) == nil && text != nil
}
