package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
	"github.com/collabdev/collab/presence"
)

func TestStatusRules(t *testing.T) {
	svc, _ := newMount(t, nil)
	ctx := context.Background()
	res, err := svc.Post(ctx, service.Actor{Name: "alice", Hops: -1}, service.PostRequest{Channel: "dev", To: "bob", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Message.ID
	for _, tt := range []struct {
		name string
		req  service.StatusRequest
		kind errkind.Kind
	}{
		{"found in its channel", service.StatusRequest{Channel: "dev", ID: id}, -1},
		{"found in every channel", service.StatusRequest{ID: id}, -1},
		{"another channel", service.StatusRequest{Channel: "ops", ID: id}, errkind.NotFound},
		{"nowhere", service.StatusRequest{ID: "msg-20200101-000000-x-abcd"}, errkind.NotFound},
		{"bad id", service.StatusRequest{ID: "../x"}, errkind.Invalid},
		{"bad channel", service.StatusRequest{Channel: "a/b", ID: id}, errkind.Invalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := svc.Status(ctx, tt.req)
			if tt.kind < 0 {
				if err != nil || st.Channel != "dev" || len(st.Addressees) != 1 || st.Addressees[0].Agent != "bob" {
					t.Errorf("Status = %+v, %v; want dev's message to bob", st, err)
				}
				return
			}
			if err == nil || errkind.Of(err) != tt.kind {
				t.Errorf("Status = %v (kind %v); want kind %v", err, errkind.Of(err), tt.kind)
			}
		})
	}
}

func TestWhoByAddress(t *testing.T) {
	svc, root := newMount(t, nil)
	for _, a := range []string{"coder--i1", "lead"} {
		if err := presence.Write(root, presence.Status{AgentID: a, State: presence.StateAwake, Substate: presence.SubIdle}); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := svc.Who(context.Background(), service.WhoRequest{Names: []string{"coder@i1"}})
	if err != nil || len(rows) != 1 || rows[0].Agent != "coder--i1" || rows[0].Status == nil {
		t.Errorf("Who(coder@i1) = %+v, %v; want coder--i1's heartbeat", rows, err)
	}
	all, err := svc.Who(context.Background(), service.WhoRequest{})
	if err != nil || len(all) != 2 {
		t.Errorf("Who() = %+v, %v; want both", all, err)
	}
	if _, err := svc.Who(context.Background(), service.WhoRequest{Names: []string{"a b"}}); !errkind.Is(err, errkind.Invalid) {
		t.Errorf("Who(a b) = %v; want Invalid", err)
	}
}

func TestReadPages(t *testing.T) {
	// A second apart: the channel's order is its names'.
	at := time.Now().Add(-time.Hour)
	svc := service.NewMount(service.Config{Root: tree.Root(t.TempDir()), Now: func() time.Time {
		at = at.Add(time.Second)
		return at
	}})
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		res, err := svc.Post(ctx, service.Actor{Name: "alice", Hops: -1}, service.PostRequest{Channel: "dev", Text: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Message.ID)
	}
	texts := func(msgs []channel.Message) string {
		var out []string
		for _, m := range msgs {
			out = append(out, m.Content.Text)
		}
		return strings.Join(out, ",")
	}
	for _, tt := range []struct {
		name string
		req  service.ReadRequest
		want string
		more bool
	}{
		{"newest", service.ReadRequest{Channel: "dev", Limit: 2}, "3,4", true},
		{"since", service.ReadRequest{Channel: "dev", Since: ids[2], Limit: 10}, "3,4", false},
		{"before", service.ReadRequest{Channel: "dev", Before: ids[3], Limit: 2}, "1,2", true},
		{"after", service.ReadRequest{Channel: "dev", After: ids[0], Limit: 2}, "1,2", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := svc.Read(ctx, tt.req)
			if err != nil || texts(p.Messages) != tt.want || p.More != tt.more {
				t.Errorf("Read = %q more %v, %v; want %q more %v", texts(p.Messages), p.More, err, tt.want, tt.more)
			}
		})
	}
	for _, req := range []service.ReadRequest{
		{Channel: "dev", Since: "nonsense"},
		{Channel: "dev", Before: "nonsense"},
		{Channel: "dev", Since: ids[0], After: ids[1]},
		{Channel: "dev", Limit: -1},
		{Channel: "../x"},
	} {
		if _, err := svc.Read(ctx, req); !errkind.Is(err, errkind.Invalid) {
			t.Errorf("Read(%+v) = %v; want Invalid", req, err)
		}
	}
}

// A channel with no folder is NotFound, naming the channels there are,
// in every kind of read; EmptyIfMissing reads it as empty.
func TestReadMissingChannel(t *testing.T) {
	svc, _ := newMount(t, nil)
	ctx := context.Background()
	if _, err := svc.Post(ctx, service.Actor{Name: "alice", Hops: -1}, service.PostRequest{Channel: "dev", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	for _, req := range []service.ReadRequest{
		{Channel: "nosuch"},
		{Channel: "nosuch", Limit: 5},
		{Channel: "nosuch", Before: "msg-20260101-000000-x-abcd"},
		{Channel: "nosuch", After: "msg-20260101-000000-x-abcd"},
		{Channel: "nosuch", All: true},
		{Channel: "nosuch", All: true, Limit: 1, Follow: true},
	} {
		_, err := svc.Read(ctx, req)
		if errkind.Of(err) != errkind.NotFound || !strings.Contains(fmt.Sprint(err), "(the channels: dev)") {
			t.Errorf("Read(%+v) = %v (kind %v); want NotFound naming dev", req, err, errkind.Of(err))
		}
		req.EmptyIfMissing = true
		if p, err := svc.Read(ctx, req); err != nil || len(p.Messages) != 0 {
			t.Errorf("Read(%+v) = %+v, %v; want an empty page", req, p, err)
		}
	}
	if p, err := svc.Read(ctx, service.ReadRequest{Channel: "dev", Limit: 10}); err != nil || len(p.Messages) != 1 {
		t.Errorf("dev: %+v, %v", p, err)
	}
}

// A post's artifacts are references that pass channel.Artifact.Check;
// anything else is Invalid and nothing is written.
func TestPostArtifacts(t *testing.T) {
	svc, root := newMount(t, nil)
	ctx := context.Background()
	n := int64(1)
	good := channel.Artifact{Path: "/a/b", Size: &n, SHA256: strings.Repeat("0", 64)}
	res, err := svc.Post(ctx, service.Actor{Name: "alice", Hops: -1}, service.PostRequest{Channel: "dev", Text: "x", Artifacts: []channel.Artifact{good}})
	if err != nil || len(res.Message.Content.ArtifactList()) != 1 {
		t.Fatalf("Post = %+v, %v", res.Message.Content, err)
	}
	bad := good
	bad.Path = "relative"
	if _, err := svc.Post(ctx, service.Actor{Name: "alice", Hops: -1}, service.PostRequest{Channel: "dev", Text: "x", Artifacts: []channel.Artifact{good, bad}}); errkind.Of(err) != errkind.Invalid {
		t.Errorf("bad artifact: %v (kind %v); want Invalid", err, errkind.Of(err))
	}
	if _, err := service.FileArtifacts([]string{string(root)}); errkind.Of(err) != errkind.Invalid {
		t.Errorf("FileArtifacts(a folder) = %v; want Invalid", err)
	}
	if p, _ := svc.Read(ctx, service.ReadRequest{Channel: "dev", Limit: 10}); len(p.Messages) != 1 {
		t.Errorf("%d messages; the refused post wrote one", len(p.Messages))
	}
}
