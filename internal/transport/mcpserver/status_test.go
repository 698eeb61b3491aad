package mcpserver

import (
	"strings"
	"testing"

	"collab/channel"
	"collab/internal/delivery"
	"collab/internal/plumbing/tree"
)

// TestMessageStatus: message_status shows each addressee's state, for a
// message of the session's channel or of another one.
func TestMessageStatus(t *testing.T) {
	root := tree.Root(t.TempDir())
	_, cs := connect(t, root)
	for _, ch := range []string{"dev", "ops"} {
		m := channel.Message{SessionID: ch, From: "claude", To: "nobody", Content: channel.Content{Text: "anyone?"}}
		if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
			t.Fatal(err)
		}
		var st delivery.Status
		if e := call(t, cs, "message_status", map[string]any{"id": m.ID}, &st); e != "" {
			t.Fatalf("message_status: %s", e)
		}
		if st.Channel != ch || len(st.Addressees) != 1 || st.Addressees[0].State != delivery.Undeliverable {
			t.Errorf("message_status of a message in %s: %+v", ch, st)
		}
	}
	if e := call(t, cs, "message_status", map[string]any{"id": "nonsense"}, nil); !strings.Contains(e, "not a message id") {
		t.Errorf("message_status of a bad id: %q", e)
	}
}
