package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/collabdev/collab/internal/agent/claim"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

// TestAskMarksTheReplySeen: send --wait's Ask, once it has the reply,
// writes the sender's awaited mark naming it (the timeline's
// reply_seen); a wait that gets none writes nothing.
func TestAskMarksTheReplySeen(t *testing.T) {
	svc, root := newMount(t, nil)
	ctx := context.Background()
	ask := func(text string, answer bool, timeout time.Duration) (service.Posted, service.Awaited, error) {
		return service.Ask(ctx, svc, service.Actor{Name: "alice", Hops: -1}, service.AskRequest{
			Post:  service.PostRequest{Channel: "dev", To: "bob", Text: text},
			Await: service.AwaitRequest{Timeout: timeout, Options: delegate.Options{Poll: 10 * time.Millisecond, Trust: signing.Any}},
			Sent: func(p service.Posted) {
				if !answer {
					return
				}
				// bob's watcher: claimed, answered.
				store := &claim.Store{Root: root, Self: claim.Owner{Agent: "bob", Host: "vm-2"}}
				if _, _, err := store.Acquire("dev", p.Message.ID); err != nil {
					t.Error(err)
				}
				r, err := svc.Post(ctx, service.Actor{Name: "bob", Hops: -1}, service.PostRequest{Channel: "dev", To: "alice", Text: "pong", InReplyTo: p.Message.ID})
				if err != nil {
					t.Error(err)
				}
				if err := store.Finish("dev", p.Message.ID, claim.Replied, r.Message.ID, ""); err != nil {
					t.Error(err)
				}
			}})
	}
	posted, got, err := ask("ping", true, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a, err := delivery.ReadAwaited(root, "dev", "alice", posted.Message.ID)
	if err != nil || a.Reply != got.Message.ID || a.Agent != "alice" || a.Host != "vm-1" || a.Time.Before(got.Message.Time().Truncate(time.Second)) {
		t.Errorf("awaited mark %+v, %v; want alice's, naming %s", a, err, got.Message.ID)
	}
	tl := delivery.TimelineFor(root, "dev", &posted.Message, "bob", delivery.Options{})
	if at, ok := tl.At(delivery.StageReplySeen); !ok || !at.Equal(a.Time) {
		t.Errorf("timeline %+v: want reply_seen at %v", tl, a.Time)
	}

	posted, _, err = ask("unanswered", false, 50*time.Millisecond)
	if err == nil {
		t.Fatal("a wait without a reply: want a timeout")
	}
	if _, err := delivery.ReadAwaited(root, "dev", "alice", posted.Message.ID); err == nil {
		t.Error("an awaited mark without a reply")
	}
}
