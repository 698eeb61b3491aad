package mcpserver

import (
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestMessageStatusTimeline: with timeline, message_status carries each
// addressee's timeline; without, none.
func TestMessageStatusTimeline(t *testing.T) {
	root := tree.Root(t.TempDir())
	_, cs := connect(t, root)
	m := channel.Message{SessionID: "dev", From: "claude", To: "nobody", Content: channel.Content{Text: "anyone?"}}
	if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
		t.Fatal(err)
	}
	var st delivery.Status
	if e := call(t, cs, "message_status", map[string]any{"id": m.ID, "timeline": true}, &st); e != "" {
		t.Fatalf("message_status: %s", e)
	}
	if len(st.Addressees) != 1 || st.Addressees[0].Timeline == nil || len(st.Addressees[0].Timeline.Stages) != 1 ||
		st.Addressees[0].Timeline.Stages[0].Name != delivery.StageSent {
		t.Errorf("message_status with timeline: %+v", st)
	}
	st = delivery.Status{}
	if e := call(t, cs, "message_status", map[string]any{"id": m.ID}, &st); e != "" || st.Addressees[0].Timeline != nil {
		t.Errorf("message_status without timeline: %+v %s", st, e)
	}
}
