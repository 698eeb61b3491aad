package service

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestFollowSeen: a run's follower (Follow) hands on what lands after it
// started and nothing from before, and a file it cannot read as a skip;
// a channel it cannot follow fails before it starts.
func TestFollowSeen(t *testing.T) {
	m, root := testMount(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	post := func(text string) {
		t.Helper()
		if _, err := m.Post(ctx, Actor{Name: "alice", Hops: -1}, PostRequest{Channel: "dev", Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	post("before")
	seen, err := m.followSeen(ctx, "dev")
	if err != nil {
		t.Fatal(err)
	}
	post("after")
	if err := os.WriteFile(root.Channel("dev")+"/msg-20260101-000000-x-0000.json", []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	var texts []string
	skips := 0
	for len(texts) < 1 || skips < 1 {
		select {
		case f := <-seen:
			for _, msg := range f.msgs {
				texts = append(texts, msg.Content.Text)
			}
			skips += len(f.skips)
		case <-ctx.Done():
			t.Fatalf("followed %q and %d skips; want the message posted after the start and the bad file", texts, skips)
		}
	}
	if len(texts) != 1 || texts[0] != "after" {
		t.Errorf("followed %q, want only what was posted after the start", texts)
	}
	if _, err := m.followSeen(ctx, "../x"); err == nil {
		t.Error("followSeen followed a bad channel name")
	}
}
