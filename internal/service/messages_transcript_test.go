package service_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/errkind"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/service"
)

// A transcript (collab read on the mount): after an id, by age, the last
// Limit, and after an id no longer in the channel what is named later.
func TestReadTranscript(t *testing.T) {
	at := time.Now().Add(-time.Hour)
	root := tree.Root(t.TempDir())
	svc := service.NewMount(service.Config{Root: root, Now: func() time.Time {
		at = at.Add(time.Minute)
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
	// The first message goes: an id no longer in the channel.
	if err := os.Remove(filepath.Join(string(root), "channels", "dev", ids[0]+".json")); err != nil {
		t.Fatal(err)
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
	}{
		{"all", service.ReadRequest{Channel: "dev", All: true}, "1,2,3,4"},
		{"newest", service.ReadRequest{Channel: "dev", All: true, Limit: 2}, "3,4"},
		{"after", service.ReadRequest{Channel: "dev", All: true, After: ids[2]}, "3,4"},
		{"after, last 1", service.ReadRequest{Channel: "dev", All: true, After: ids[1], Limit: 1}, "4"},
		{"after one gone", service.ReadRequest{Channel: "dev", All: true, After: ids[0]}, "1,2,3,4"},
		{"newer", service.ReadRequest{Channel: "dev", All: true, Newer: time.Since(at) + 90*time.Second}, "3,4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := svc.Read(ctx, tt.req)
			if err != nil || texts(p.Messages) != tt.want {
				t.Errorf("Read = %q, %v; want %q", texts(p.Messages), err, tt.want)
			}
		})
	}
	for _, req := range []service.ReadRequest{
		{Channel: "dev", All: true, After: "nonsense"},
		{Channel: "dev", All: true, Newer: -time.Second},
		{Channel: "dev", All: true, Since: ids[1]},
	} {
		if _, err := svc.Read(ctx, req); !errkind.Is(err, errkind.Invalid) {
			t.Errorf("Read(%+v) = %v; want Invalid", req, err)
		}
	}
}

// A transcript's position to follow from passes over what it showed.
func TestReadTranscriptThenFollow(t *testing.T) {
	// A second between posts: ids of one second sort by sender and hex,
	// not by time.
	var mu sync.Mutex
	at := time.Now().Add(-time.Minute)
	svc := service.NewMount(service.Config{Root: tree.Root(t.TempDir()), Host: "vm-1", Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		at = at.Add(time.Second)
		return at
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	post := func(text string) {
		if _, err := svc.Post(ctx, service.Actor{Name: "alice", Hops: -1}, service.PostRequest{Channel: "dev", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	post("old")
	post("shown")
	p, err := svc.Read(ctx, service.ReadRequest{Channel: "dev", All: true, Limit: 1, Follow: true})
	if err != nil || len(p.Messages) != 1 || p.Messages[0].Content.Text != "shown" {
		t.Fatalf("Read = %+v, %v; want the newest", p.Messages, err)
	}
	got := make(chan string, 4)
	started := make(chan struct{})
	go svc.Follow(ctx, service.FollowRequest{Channel: "dev", From: &p.From, Poll: 10 * time.Millisecond, Started: func() { close(started) }},
		func(msgs []channel.Message) error {
			for _, m := range msgs {
				got <- m.Content.Text
			}
			return nil
		})
	<-started
	post("new")
	select {
	case text := <-got:
		if text != "new" {
			t.Errorf("followed %q first; want new", text)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing followed")
	}
}
