package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/internal/workflow"
	"github.com/collabdev/collab/internal/workspace/inbox"
)

func newMount(t *testing.T, publish func(context.Context, *channel.Message) error) (*service.Mount, tree.Root) {
	t.Helper()
	root := tree.Root(t.TempDir())
	return service.NewMount(service.Config{Root: root, Host: "vm-1", Publish: publish}), root
}

func TestPostRules(t *testing.T) {
	person := service.Actor{Name: "alice", Hops: -1}
	agent := service.Actor{Name: "claude", Hops: 2, Mode: channel.ModeMCP}
	tests := []struct {
		name  string
		actor service.Actor
		req   service.PostRequest
		kind  errkind.Kind // of the error; Failed: none
		want  string       // in the error
		check func(t *testing.T, m channel.Message)
	}{
		{name: "broadcast by default", actor: person, req: service.PostRequest{Channel: "dev", Text: "hi"},
			check: func(t *testing.T, m channel.Message) {
				if m.To != channel.Broadcast || m.Type != "chat" || m.Metadata.Hops != 0 || m.Metadata.Host != "vm-1" {
					t.Errorf("posted %+v; want to all, chat, hops 0, host vm-1", m)
				}
			}},
		{name: "one hop deeper than the run", actor: agent, req: service.PostRequest{Channel: "dev", To: "codex", Text: "hi"},
			check: func(t *testing.T, m channel.Message) {
				if m.To != "codex" || m.Metadata.Hops != 3 || m.Metadata.Mode != channel.ModeMCP {
					t.Errorf("posted %+v; want to codex at hops 3, mode mcp", m)
				}
			}},
		{name: "name at instance", actor: person, req: service.PostRequest{Channel: "dev", To: "reviewer@pr-1", Text: "look"},
			check: func(t *testing.T, m channel.Message) {
				if m.To != "reviewer--pr-1" {
					t.Errorf("to = %q, want reviewer--pr-1", m.To)
				}
			}},
		{name: "await reply and code", actor: person, req: service.PostRequest{Channel: "dev", Text: "q", Code: "x := 1", Type: "task_assign", AwaitReply: true},
			check: func(t *testing.T, m channel.Message) {
				if !m.AwaitsReply() || m.Content.Code == nil || *m.Content.Code != "x := 1" || m.Type != "task_assign" {
					t.Errorf("posted %+v; want await_reply, the code, task_assign", m)
				}
			}},
		{name: "sender's priority", actor: person, req: service.PostRequest{Channel: "dev", To: "codex", Text: "urgent: blocked", Priority: "low"},
			check: func(t *testing.T, m channel.Message) {
				if p := inbox.PriorityOf(&m); p != inbox.Low {
					t.Errorf("priority %q, want low (the sender's, over the words)", p)
				}
			}},
		{name: "bad priority", actor: person, req: service.PostRequest{Channel: "dev", Text: "hi", Priority: "urgent"}, kind: errkind.Invalid, want: `priority "urgent"`},
		{name: "empty text", actor: person, req: service.PostRequest{Channel: "dev", Text: "  "}, kind: errkind.Invalid, want: "the message text is empty"},
		{name: "bad recipient", actor: person, req: service.PostRequest{Channel: "dev", To: "../x", Text: "hi"}, kind: errkind.Invalid, want: "recipient"},
		{name: "instance only", actor: person, req: service.PostRequest{Channel: "dev", To: "@pr-1", Text: "hi"}, kind: errkind.Invalid, want: "to:"},
		{name: "bad channel", actor: person, req: service.PostRequest{Channel: "a/b", Text: "hi"}, kind: errkind.Invalid, want: "channel"},
		{name: "no channel", actor: person, req: service.PostRequest{Text: "hi"}, kind: errkind.Invalid, want: "no channel"},
		{name: "no instance", actor: person, req: service.PostRequest{To: "coder@nope", Text: "hi"}, kind: errkind.NotFound, want: "no channel"},
		{name: "bad reply id", actor: person, req: service.PostRequest{Channel: "dev", Text: "hi", InReplyTo: "nope"}, kind: errkind.Invalid, want: `reply_to "nope" is not a message id`},
		{name: "bad type", actor: person, req: service.PostRequest{Channel: "dev", Text: "hi", Type: "a b\n"}, kind: errkind.Invalid, want: "type"},
		{name: "bad sender", actor: service.Actor{Name: "a b"}, req: service.PostRequest{Channel: "dev", Text: "hi"}, kind: errkind.Invalid, want: "sender"},
		{name: "too large", actor: person, req: service.PostRequest{Channel: "dev", Text: strings.Repeat("x", channel.MaxMessageSize)}, kind: errkind.Invalid, want: "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, root := newMount(t, nil)
			got, err := svc.Post(context.Background(), tt.actor, tt.req)
			if tt.want != "" {
				if err == nil || errkind.Of(err) != tt.kind || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Post = %v (kind %v); want a %v error with %q", err, errkind.Of(err), tt.kind, tt.want)
				}
				if msgs, _, _ := channel.ReadAll(root, "dev", channel.ReaderOptions{}); len(msgs) > 0 {
					t.Errorf("a refused post wrote %v", msgs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m, err := channel.Lookup(root, tt.req.Channel, got.Message.ID)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, m)
		})
	}
}

func TestPostTooLargeKeepsItsSentinel(t *testing.T) {
	svc, _ := newMount(t, nil)
	_, err := svc.Post(context.Background(), service.Actor{Name: "a", Hops: -1},
		service.PostRequest{Channel: "dev", Text: strings.Repeat("x", channel.MaxMessageSize)})
	if !errors.Is(err, channel.ErrTooLarge) {
		t.Errorf("err = %v; want it to wrap channel.ErrTooLarge", err)
	}
}

func TestPostWarnsAndThreads(t *testing.T) {
	svc, root := newMount(t, nil)
	ctx := context.Background()
	first, err := svc.Post(ctx, service.Actor{Name: "alice", Hops: -1}, service.PostRequest{Channel: "dev", Text: "start"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc.Post(ctx, service.Actor{Name: "bob", Hops: -1}, service.PostRequest{Channel: "dev", To: "ghost", Text: "re", InReplyTo: first.Message.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], `"ghost" is not a known agent`) {
		t.Errorf("warnings = %q; want the unknown addressee", got.Warnings)
	}
	m, _ := channel.Lookup(root, "dev", got.Message.ID)
	if m.Metadata.InReplyTo != first.Message.ID || m.Metadata.Thread != first.Message.ID {
		t.Errorf("reply metadata = %+v; want threaded on %s", m.Metadata, first.Message.ID)
	}
	late, err := svc.Post(ctx, service.Actor{Name: "bob", Hops: -1}, service.PostRequest{Channel: "dev", Text: "late", InReplyTo: "msg-20200101-000000-x-abcd"})
	if err != nil {
		t.Fatal(err)
	}
	if len(late.Warnings) != 1 || !strings.Contains(late.Warnings[0], "not in channel dev") {
		t.Errorf("warnings = %q; want the parent elsewhere", late.Warnings)
	}
	if late.Message.Metadata.InReplyTo != "msg-20200101-000000-x-abcd" {
		t.Errorf("in_reply_to = %q", late.Message.Metadata.InReplyTo)
	}
}

func TestPostPublishes(t *testing.T) {
	var published []string
	svc, _ := newMount(t, func(_ context.Context, m *channel.Message) error {
		published = append(published, m.ID)
		return errors.New("no server") // logged; the post stands
	})
	got, err := svc.Post(context.Background(), service.Actor{Name: "alice", Hops: -1}, service.PostRequest{Channel: "dev", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if len(published) != 1 || published[0] != got.Message.ID {
		t.Errorf("published %v; want %s", published, got.Message.ID)
	}
}

// TestPostToInstanceAgent: NAME@INSTANCE without a channel posts on the
// instance's channel, from its record.
func TestPostToInstanceAgent(t *testing.T) {
	svc, root := newMount(t, nil)
	for _, r := range []workflow.Record{
		{Name: "review", Instance: "i1", Status: workflow.Running, Agents: []string{"coder--i1"}, Channel: "ch-one", Started: time.Now().Add(-time.Hour)},
		{Name: "review", Instance: "i2", Status: workflow.Running, Agents: []string{"coder--i2", "lead--i2"}, Channel: "ch-two", Started: time.Now()},
	} {
		if err := workflow.WriteRecord(root, &r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := svc.Post(context.Background(), service.Actor{Name: "alice", Hops: -1}, service.PostRequest{To: "coder@i2", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Message.SessionID != "ch-two" || got.Message.To != "coder--i2" {
		t.Errorf("posted on %s to %s; want ch-two to coder--i2", got.Message.SessionID, got.Message.To)
	}
	if _, err := channel.Lookup(root, "ch-two", got.Message.ID); err != nil {
		t.Error(err)
	}
}
