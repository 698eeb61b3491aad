package bridge

import (
	"context"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// TestBridgeReports: the bridge's sweep reports a message to an unknown
// agent, once, from the bridge.
func TestBridgeReports(t *testing.T) {
	root := tree.Root(t.TempDir())
	m := channel.Message{SessionID: "dev", From: "alice", To: "nobody", Content: channel.Content{Text: "hello?"}}
	if err := (&channel.Writer{Root: root}).Post(&m); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reports(ctx, Config{Root: root, Host: "h"}, 10*time.Millisecond, 50*time.Millisecond) }()
	defer func() {
		cancel()
		<-done
	}()
	count := func() (n int, from string) {
		msgs, _, _ := channel.ReadAll(root, "dev", channel.ReaderOptions{})
		for _, r := range msgs {
			if r.IsDeliveryReport() && r.Metadata.InReplyTo == m.ID && r.To == "alice" {
				n, from = n+1, r.From
			}
		}
		return n, from
	}
	deadline := time.Now().Add(20 * time.Second)
	for n, _ := count(); n == 0; n, _ = count() {
		if time.Now().After(deadline) {
			t.Fatal("no report")
		}
		time.Sleep(5 * time.Millisecond)
	}
	k, err := delivery.ReadReport(root, "dev", "nobody", m.ID)
	if err != nil || k.State != delivery.Undeliverable {
		t.Fatalf("mark %+v, %v", k, err)
	}
	// Sweeps go on: still one.
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if n, from := count(); n != 1 || from != ReportAgent {
			t.Fatalf("%d reports from %s", n, from)
		}
	}
}
