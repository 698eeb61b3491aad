package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/identity/signing"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workspace/delegate"
)

func TestAwaitReplyTimeout(t *testing.T) {
	_, err := service.AwaitReply(context.Background(), service.AwaitRequest{Channel: "dev", ID: "msg-1", Timeout: 10 * time.Millisecond,
		Wait: func(ctx context.Context, _ delegate.Options) (channel.Message, error) {
			<-ctx.Done()
			return channel.Message{}, ctx.Err()
		}})
	if !errkind.Is(err, errkind.Timeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AwaitReply = %v; want a Timeout wrapping the deadline", err)
	}
}

// Every addressee refused: the wait ends as a Conflict saying why, with
// the guard's notice (not taken for the reply) found by the last look.
func TestAwaitReplyRefused(t *testing.T) {
	notice := channel.Message{ID: "n1", From: "bob", Content: channel.Content{Text: "refused: max hops"}}
	notice.Metadata.InReplyTo = "msg-1"
	notice.Type = delivery.NoticeType
	var changed []string
	looks := 0
	got, err := service.AwaitReply(context.Background(), service.AwaitRequest{Channel: "dev", ID: "msg-1",
		Options: delegate.Options{Poll: 5 * time.Millisecond},
		Wait: func(ctx context.Context, opt delegate.Options) (channel.Message, error) {
			looks++
			if !opt.Skip(&notice) {
				return notice, nil // a notice taken for the reply
			}
			<-ctx.Done()
			return channel.Message{}, ctx.Err()
		},
		Status: func(context.Context) (delivery.Status, error) {
			return delivery.Status{Addressees: []delivery.Addressee{{Agent: "bob", State: delivery.Refused}}}, nil
		},
		Changed: func(agent, state string) { changed = append(changed, agent+": "+state) }})
	if !errkind.Is(err, errkind.Conflict) || !strings.Contains(err.Error(), "no answer will come to msg-1: bob") {
		t.Errorf("AwaitReply = %v; want a Conflict: no answer will come", err)
	}
	if looks != 2 || len(changed) != 1 || !strings.HasPrefix(changed[0], "bob: ") {
		t.Errorf("looks %d, changed %q; want a last look and bob's change", looks, changed)
	}
	if len(got.Notices) == 0 || got.Notices[0] != "refused: max hops" {
		t.Errorf("notices %q; want the guard's", got.Notices)
	}
}

func TestAwaitReplyJudges(t *testing.T) {
	reply := channel.Message{ID: "r1", From: "bob", Content: channel.Content{Text: "done"}}
	got, err := service.AwaitReply(context.Background(), service.AwaitRequest{Channel: "dev", ID: "msg-1",
		Options: delegate.Options{Trust: signing.Any},
		Wait:    func(context.Context, delegate.Options) (channel.Message, error) { return reply, nil }})
	if err != nil || got.Message.ID != "r1" || got.Verdict != signing.Unsigned {
		t.Errorf("AwaitReply = %+v, %v; want r1, unsigned", got, err)
	}
}

func TestReplyTrust(t *testing.T) {
	root := tree.Root(t.TempDir())
	var warned []string
	opt, err := service.ReplyTrust(root, "", "", func(s string) { warned = append(warned, s) })
	if err != nil || opt.Trust != signing.DefaultPolicy || opt.Verifier == nil {
		t.Errorf("ReplyTrust = %+v, %v; want the default policy and a verifier", opt, err)
	}
	if len(warned) != 0 {
		t.Errorf("warned %q of no keyring; want nothing (nothing to verify with)", warned)
	}
}

// Ask: the wait is ready before the post, so a reply posted at once is
// found; the asker's own messages are not the reply.
func TestAskFindsTheReply(t *testing.T) {
	svc, _ := newMount(t, nil)
	ctx := context.Background()
	var sent service.Posted
	posted, got, err := service.Ask(ctx, svc, service.Actor{Name: "alice", Hops: -1}, service.AskRequest{
		Post:  service.PostRequest{Channel: "dev", To: "bob", Text: "ping"},
		Await: service.AwaitRequest{Timeout: 5 * time.Second, Options: delegate.Options{Poll: 10 * time.Millisecond, Trust: signing.Any}},
		Track: true,
		Sent: func(p service.Posted) {
			sent = p
			for _, from := range []string{"alice", "bob"} {
				if _, err := svc.Post(ctx, service.Actor{Name: from, Hops: -1}, service.PostRequest{Channel: "dev", To: "alice", Text: "pong " + from, InReplyTo: p.Message.ID}); err != nil {
					t.Error(err)
				}
			}
		}})
	if err != nil || sent.Message.ID != posted.Message.ID || !posted.Message.AwaitsReply() || got.Message.Content.Text != "pong bob" {
		t.Errorf("Ask = %+v, %+v, %v; want bob's pong to the awaited ping", posted.Message, got.Message, err)
	}
}
