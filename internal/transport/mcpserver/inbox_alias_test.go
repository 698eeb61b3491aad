package mcpserver

import (
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
)

// TestInboxInstanceAlias: the inbox tools of a workflow agent
// (reviewer--i1) show a message that names it by its alias in its
// instance's channel.
func TestInboxInstanceAlias(t *testing.T) {
	root := tree.Root(t.TempDir())
	rec := workflow.Record{Name: "review", Instance: "i1", Status: workflow.Running, Started: time.Now(),
		Agents: []string{"reviewer--i1"}, Channel: "review--i1"}
	if err := workflow.WriteRecord(root, &rec); err != nil {
		t.Fatal(err)
	}
	m := &channel.Message{SessionID: "review--i1", From: "human", To: "all", Content: channel.Content{Text: "@reviewer please review"}}
	if err := (&channel.Writer{Root: root}).Post(m); err != nil {
		t.Fatal(err)
	}
	_, cs := connectAs(t, root, "reviewer--i1", "review--i1")
	var res InboxResult
	if e := call(t, cs, "inbox_peek", nil, &res); e != "" {
		t.Fatal(e)
	}
	if len(res.Unread) != 1 || res.Unread[0].Message.ID != m.ID {
		t.Errorf("inbox_peek = %+v; want the kickoff", res.Unread)
	}
}
