package delegate_test

import (
	"context"
	"testing"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

// TestWaitPassesOverReports: a delivery report in reply to the message is
// not the reply a waiter takes; the answer after it is.
func TestWaitPassesOverReports(t *testing.T) {
	root := tree.Root(t.TempDir())
	q := ask(t, root)
	rp := &delivery.Reporter{Root: root, Agent: "gemini"}
	if _, err := rp.Send(&q, delivery.Report{Agent: "codex", State: delivery.Expired, Reason: "nobody claimed it within 1m0s"}); err != nil {
		t.Fatal(err)
	}
	var opt delegate.Options
	msgs, _, err := channel.ReadAll(root, "dev", channel.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.IsDeliveryReport() && opt.IsReply(&m, q.ID) {
			t.Fatalf("the report %s is taken as the reply", m.ID)
		}
	}
	r := reply(t, root, "codex", q.ID, q.Time())
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	got, err := delegate.Wait(ctx, root, "dev", q.ID, opt)
	if err != nil || got.ID != r.ID {
		t.Fatalf("Wait = %s, %v; want the answer %s", got.ID, err, r.ID)
	}
}
