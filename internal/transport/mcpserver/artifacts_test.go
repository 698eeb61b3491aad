package mcpserver

import (
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestReadShowsArtifacts: channel_peek and channel_read show the files a
// message refers to, whoever wrote them.
func TestReadShowsArtifacts(t *testing.T) {
	root := tree.Root(t.TempDir())
	n := int64(6)
	m := &channel.Message{SessionID: "dev", From: "codex", To: "claude", Content: channel.Content{Text: "see"}}
	if err := m.Content.SetArtifacts([]channel.Artifact{{Path: "/srv/a.txt", Size: &n, SHA256: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"}}); err != nil {
		t.Fatal(err)
	}
	if err := (&channel.Writer{Root: root}).Post(m); err != nil {
		t.Fatal(err)
	}
	_, cs := connect(t, root)
	for _, tool := range []string{"channel_peek", "channel_read"} {
		var got ReadResult
		if e := call(t, cs, tool, map[string]any{}, &got); e != "" || len(got.Messages) != 1 {
			t.Fatalf("%s = %+v, %q", tool, got, e)
		}
		a := got.Messages[0].Artifacts
		if len(a) != 1 || a[0].Path != "/srv/a.txt" || a[0].Size == nil || *a[0].Size != 6 || a[0].SHA256[:8] != "5891b5b5" {
			t.Errorf("%s: artifacts %+v", tool, a)
		}
	}
}
