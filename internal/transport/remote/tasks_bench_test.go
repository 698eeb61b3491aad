package remote

import (
	"context"
	"testing"

	"github.com/collabdev/collab/internal/transport/bridge"
	"github.com/collabdev/collab/internal/workspace/task"
)

// BenchmarkRemoteTaskCheckpoint: one signed checkpoint from a remote
// host (prepare, sign, event: two requests) on a bridge on loopback NATS
// into a tree on the local disk.
func BenchmarkRemoteTaskCheckpoint(b *testing.B) {
	_, url, signer := bridgeOnLoopback(b)
	c := dialAs(b, url, "a", signer)
	ctx := context.Background()
	if _, err := c.Task(ctx, bridge.TaskRequest{Action: "add", Channel: "dev", Title: "bench"}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.TaskEvent(ctx, "dev", "t1", task.EvClaimed, "", task.Checkpoint{}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := c.TaskEvent(ctx, "dev", "t1", task.EvCheckpoint, "step", task.Checkpoint{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRemoteDocAppend: one document append from a remote host.
func BenchmarkRemoteDocAppend(b *testing.B) {
	_, url, signer := bridgeOnLoopback(b)
	c := dialAs(b, url, "a", signer)
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.Doc(ctx, bridge.DocRequest{Action: "append", Channel: "dev", File: "log.md", Content: "a line\n"}); err != nil {
			b.Fatal(err)
		}
	}
}
