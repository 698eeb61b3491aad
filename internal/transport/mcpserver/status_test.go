package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestMessageStatus: message_status shows each addressee's state for a
// message of the session's channel; one of another channel gets the same
// answer as one no channel holds, so it tells nothing of the channels the
// session cannot reach.
func TestMessageStatus(t *testing.T) {
	root := tree.Root(t.TempDir())
	_, cs := connect(t, root)
	post := func(ch string) string {
		t.Helper()
		m := channel.Message{SessionID: ch, From: "claude", To: "nobody", Content: channel.Content{Text: "anyone?"}}
		if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	dev, ops := post("dev"), post("ops")
	var st delivery.Status
	if e := call(t, cs, "message_status", map[string]any{"id": dev}, &st); e != "" {
		t.Fatalf("message_status: %s", e)
	}
	if st.Channel != "dev" || len(st.Addressees) != 1 || st.Addressees[0].State != delivery.Undeliverable {
		t.Errorf("message_status of a message in dev: %+v", st)
	}
	nowhere := channel.NewID("claude", time.Now(), "0000")
	st = delivery.Status{}
	got := call(t, cs, "message_status", map[string]any{"id": ops}, &st)
	want := strings.ReplaceAll(call(t, cs, "message_status", map[string]any{"id": nowhere}, nil), nowhere, ops)
	if got == "" || got != want {
		t.Errorf("message_status of a message in ops from a session on dev = %q, %+v; want %q, as for a message no channel holds", got, st, want)
	}
	if !strings.Contains(want, "no such message") {
		t.Errorf("message_status of a message no channel holds: %q", want)
	}
	if e := call(t, cs, "message_status", map[string]any{"id": "nonsense"}, nil); !strings.Contains(e, "not a message id") {
		t.Errorf("message_status of a bad id: %q", e)
	}
}
