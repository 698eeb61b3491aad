package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/service"
)

// TestFollowFromNow: Follow hands on what is posted after it starts,
// and nothing from before; fn's error ends it.
func TestFollowFromNow(t *testing.T) {
	svc, _ := newMount(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	post := func(text string) string {
		t.Helper()
		res, err := svc.Post(ctx, service.Actor{Name: "alice", Hops: -1}, service.PostRequest{Channel: "dev", Text: text})
		if err != nil {
			t.Fatal(err)
		}
		return res.Message.ID
	}
	post("before")
	stop := errors.New("got it")
	done := make(chan error, 1)
	var got []string
	started := make(chan struct{})
	go func() {
		close(started)
		done <- svc.Follow(ctx, service.FollowRequest{Channel: "dev", Poll: 10 * time.Millisecond}, func(msgs []channel.Message) error {
			for _, m := range msgs {
				got = append(got, m.Content.Text)
			}
			return stop
		})
	}()
	<-started
	time.Sleep(50 * time.Millisecond) // the follow has sought the end
	post("after")
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("Follow = %v; want fn's error", err)
	}
	if len(got) != 1 || got[0] != "after" {
		t.Errorf("followed %q; want only the message posted after the start", got)
	}
}
