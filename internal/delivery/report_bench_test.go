package delivery_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/delivery"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/registry"
)

// BenchmarkSweep: a channel of 1,000 messages to a registered agent that
// never claims them (all stay open). "first" is a watcher's first sweep
// (reads and judges every message of the window); "idle" a later one
// with nothing due (a listing of the folder and the settings file).
func BenchmarkSweep(b *testing.B) {
	root := tree.Root(b.TempDir())
	a := registry.Agent{ID: "bob", Role: "reviewer", Host: "vm-9", Registered: time.Now().UTC().Format(time.RFC3339Nano)}
	if err := registry.Write(root, a); err != nil {
		b.Fatal(err)
	}
	w := &channel.Writer{Root: root}
	for i := range 1000 {
		m := channel.Message{SessionID: "dev", From: "alice", To: "bob", Content: channel.Content{Text: fmt.Sprint("task ", i)}}
		if err := w.Post(&m); err != nil {
			b.Fatal(err)
		}
	}
	sweeper := func() *delivery.Sweeper {
		return &delivery.Sweeper{Reporter: &delivery.Reporter{Root: root, Agent: "carol"}}
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			sweeper().Sweep([]string{"dev"})
		}
	})
	b.Run("idle", func(b *testing.B) {
		s := sweeper()
		s.Sweep([]string{"dev"})
		for b.Loop() {
			s.Sweep([]string{"dev"})
		}
	})
}
