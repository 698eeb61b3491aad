package service_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/delegate"
	"github.com/collabdev/collab/internal/workspace/registry"
)

// TestAwaitReplyReported: a wait on a message whose only addressee's
// report says it expired does not take the report for the reply: it ends
// as a Conflict naming the report.
func TestAwaitReplyReported(t *testing.T) {
	root := tree.Root(t.TempDir())
	bob := registry.Agent{ID: "bob", Role: "reviewer", Host: "vm-9", Registered: time.Now().UTC().Format(time.RFC3339Nano)}
	if err := registry.Write(root, bob); err != nil {
		t.Fatal(err)
	}
	m := channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: "soon?"}}
	if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
		t.Fatal(err)
	}
	id, err := (&delivery.Reporter{Root: root, Agent: "carol"}).Send(&m, delivery.Report{Agent: "bob", State: delivery.Expired, Reason: "nobody claimed it within 1s"})
	if err != nil || id == "" {
		t.Fatalf("Send = %q, %v", id, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opt := delegate.Options{Poll: 5 * time.Millisecond}
	_, err = service.AwaitReply(ctx, service.AwaitRequest{Channel: "dev", ID: m.ID, Options: opt,
		Wait: func(ctx context.Context, opt delegate.Options) (channel.Message, error) {
			return delegate.Wait(ctx, root, "dev", m.ID, opt)
		},
		Status: service.MountStatus(root, "dev", m.ID, "", nil)})
	if !errkind.Is(err, errkind.Conflict) || !strings.Contains(err.Error(), "expired") || !strings.Contains(err.Error(), id) {
		t.Fatalf("AwaitReply = %v; want a Conflict naming the report %s", err, id)
	}
}
