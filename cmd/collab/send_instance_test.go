package main

import (
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workflow"
)

// TestSendToInstanceAgentFindsItsChannel: send --to NAME@INSTANCE without
// --channel posts on the instance's channel, from its record.
func TestSendToInstanceAgentFindsItsChannel(t *testing.T) {
	root := tree.Root(newTree(t))
	rec := workflow.Record{Name: "review", Instance: "i2", Status: workflow.Running, Agents: []string{"coder--i2"},
		Channel: "review-i2", Started: time.Now()}
	if err := workflow.WriteRecord(root, &rec); err != nil {
		t.Fatal(err)
	}
	r := runCollab(t, map[string]string{"COLLAB_ROOT": string(root)}, "", "send", "--agent", "alice", "--to", "coder@i2", "please look")
	if r.code != 0 {
		t.Fatalf("send: exit %d, %q", r.code, r.stderr)
	}
	m, err := channel.Lookup(root, "review-i2", strings.TrimSpace(r.stdout))
	if err != nil {
		t.Fatalf("not in the instance's channel: %v", err)
	}
	if m.To != "coder--i2" || m.From != "alice" {
		t.Errorf("sent %+v; want from alice to coder--i2", m)
	}
	r = runCollab(t, map[string]string{"COLLAB_ROOT": string(root)}, "", "send", "--agent", "alice", "--to", "coder@i9", "anyone?")
	if r.code == 0 || !strings.Contains(r.stderr, "i9") {
		t.Errorf("send to an instance with no record: exit %d, %q; want a refusal naming it", r.code, r.stderr)
	}
}
