package jsonrpc

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecode: Decode never panics; what it accepts is exactly one
// kind (a request has a method and an id that is not null, a
// notification a method and no id, a response an id and no method), and
// it decodes the same once encoded again.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error","data":{"details":"x"}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
		`{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"options":[{"optionId":"cancel","kind":"reject_once"}]}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		`{"jsonrpc":"2.0","id":3,"result":null}`,
		`[{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"1.0","method":"x"}`,
		`not json`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, kind, err := Decode(line)
		if err != nil {
			if !errors.Is(err, ErrNotRPC) || kind != 0 {
				t.Fatalf("error %v with kind %d", err, kind)
			}
			return
		}
		hasID := len(m.ID) > 0 && string(m.ID) != "null"
		switch kind {
		case Request:
			if m.Method == "" || !hasID {
				t.Fatalf("request %+v", m)
			}
		case Notification:
			if m.Method == "" || len(m.ID) > 0 {
				t.Fatalf("notification %+v", m)
			}
		case Response:
			if m.Method != "" || len(m.ID) == 0 || (m.Result != nil && m.Error != nil) {
				t.Fatalf("response %+v", m)
			}
		default:
			t.Fatalf("kind %d without an error", kind)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, again, err := Decode(b); err != nil || again != kind {
			t.Fatalf("re-encoded %s: kind %d, %v; want %d", b, again, err, kind)
		}
	})
}
