package web

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/collabdev/collab/channel"
)

// TestAPIMessagesNeedsInput checks the message view carries a question's
// needs_input (its job and options; allow and deny for a permission) so
// an API user can answer it, and that the answer posts as a reply.
func TestAPIMessagesNeedsInput(t *testing.T) {
	ts := newTestServer(t, Config{})
	w := &channel.Writer{Root: ts.root}
	q := channel.Message{SessionID: "dev", From: "coder", To: "ann", Content: channel.Content{Text: "which one?"}}
	q.SetExtension("needs_input", []byte(`{"job":"job-1","options":["left","right"]}`))
	perm := channel.Message{SessionID: "dev", From: "coder", To: "ann", Content: channel.Content{Text: "may I run Bash?"}}
	perm.SetExtension("needs_input", []byte(`{"job":"job-2","allow":["Bash"]}`))
	for _, m := range []*channel.Message{&q, &perm} {
		if err := w.Post(m); err != nil {
			t.Fatal(err)
		}
	}
	post(t, ts.root, "dev", "bob", "all", "plain")
	code, body := ts.do(t, "GET", "/api/channels/dev/messages", "")
	var p Page
	if err := json.Unmarshal([]byte(body), &p); code != 200 || err != nil {
		t.Fatalf("%d %s %v", code, body, err)
	}
	got := map[string]*NeedsInput{}
	for _, m := range p.Messages {
		got[m.Text] = m.NeedsInput
	}
	if n := got["which one?"]; n == nil || n.Job != "job-1" || !slices.Equal(n.Options, []string{"left", "right"}) {
		t.Errorf("question: needs_input %+v\n%s", n, body)
	}
	if n := got["may I run Bash?"]; n == nil || n.Job != "job-2" || !slices.Equal(n.Options, []string{"allow", "deny"}) || !slices.Equal(n.Allow, []string{"Bash"}) {
		t.Errorf("permission: needs_input %+v\n%s", n, body)
	}
	if n := got["plain"]; n != nil || strings.Count(body, `"needs_input"`) != 2 {
		t.Errorf("plain message: needs_input %+v\n%s", n, body)
	}
	// The answer: one option, as a reply to the question, to its sender.
	code, body = ts.do(t, "POST", "/api/channels/dev/messages", `{"text":"left","to":"coder","reply_to":"`+q.ID+`"}`)
	if code != 200 && code != 201 {
		t.Fatalf("answer: %d %s", code, body)
	}
	msgs, err := channel.Recent(ts.root, "dev", "", 1)
	if err != nil || len(msgs) != 1 || msgs[0].Metadata.InReplyTo != q.ID || msgs[0].To != "coder" || msgs[0].Content.Text != "left" {
		t.Errorf("answer in the channel: %+v %v", msgs, err)
	}
}
