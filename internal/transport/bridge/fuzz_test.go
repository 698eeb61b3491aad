package bridge

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeRequest: any body decodes or is refused as invalid, never
// panics; and Handle answers any subject and body with one JSON reply
// with a code when not ok.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"channel":"dev","message":{"from":"alice","content":{"text":"x"}}}`,
		`{"channel":"dev","after":"msg-20260101-000000-alice-0000","limit":3}`,
		`{"presence":{"agent_id":"alice","state":"AWAKE"}}`, `{"of":"bob","job":"job-1","kill":{"by":"alice"}}`,
		`[]`, `{"channel":1}`, `{} {}`, `{"x":1}`, "\x00", `{"message":"` + string(make([]byte, 100)) + `"}`,
	} {
		f.Add("post", s)
		f.Add("read", s)
	}
	for _, s := range []string{
		`{"action":"read","channel":"dev","file":"notes.md"}`, `{"action":"write","channel":"dev","content":"x","if_version":"v"}`,
		`{"action":"list","channel":"dev"}`, `{"action":"show","channel":"dev","id":"t1"}`,
		`{"action":"event","channel":"dev","id":"t1","event":{"seq":1,"event":"claimed","agent":"alice"}}`,
		`{"action":"add","channel":"dev","title":"x","depends":["t1"]}`,
	} {
		f.Add("doc", s)
		f.Add("task", s)
	}
	e := newEnv(f)
	s := e.server(Config{MaxReply: 4096})
	f.Fuzz(func(t *testing.T, op, body string) {
		for _, v := range []any{&PostRequest{}, &PresenceRequest{}, &ReadRequest{}, &WhoRequest{}, &StatusRequest{}, &KillRequest{}, &DocRequest{}, &TaskRequest{}} {
			if err := DecodeRequest([]byte(body), v); err != nil {
				if e, ok := err.(*Error); !ok || e.Code != CodeInvalid {
					t.Fatalf("DecodeRequest(%q): %v, want an invalid *Error", body, err)
				}
			}
		}
		out := s.Handle(RequestSubject(op, "alice"), []byte(body))
		var r Reply
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("reply %q: %v", out, err)
		}
		if !r.OK && r.Code == "" {
			t.Fatalf("a refusal without a code: %s", out)
		}
		if r.OK && op == OpPost {
			t.Fatalf("an unsigned post went through: %s", out)
		}
		var tr TaskReply
		if op == OpTask && json.Unmarshal(out, &tr) == nil && tr.OK && tr.Task != nil && tr.Task.Events > 0 {
			t.Fatalf("an unsigned task event went through: %s", out)
		}
	})
}
