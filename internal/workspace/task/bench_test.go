package task_test

import (
	"fmt"
	"testing"

	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/testsupport/bindfstest"
	"github.com/collabdev/collab/internal/workspace/task"
)

// BenchmarkClaimDone: one task added, claimed and finished per iteration,
// on a local folder and through a bindfs mount (a stand-in for NFS).
func BenchmarkClaimDone(b *testing.B) {
	for _, where := range []string{"local", "bindfs"} {
		b.Run(where, func(b *testing.B) {
			root := tree.Root(b.TempDir())
			if where == "bindfs" {
				root = tree.Root(bindfstest.Mount(b, string(root)))
			}
			board, err := task.New(root, "bench")
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				tk, err := board.Add(task.NewTask{Title: fmt.Sprint("task ", i), By: "lead"})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := board.Claim(tk.ID, "codex"); err != nil {
					b.Fatal(err)
				}
				if _, err := board.Finish(tk.ID, "codex", "ok"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkList: listing a board of 200 finished tasks.
func BenchmarkList(b *testing.B) {
	root := tree.Root(b.TempDir())
	board, _ := task.New(root, "bench")
	for i := range 200 {
		tk, err := board.Add(task.NewTask{Title: fmt.Sprint("task ", i), By: "lead"})
		if err != nil {
			b.Fatal(err)
		}
		board.Claim(tk.ID, "codex")
		board.Finish(tk.ID, "codex", "ok")
	}
	for b.Loop() {
		if tasks, _, err := board.List(); err != nil || len(tasks) != 200 {
			b.Fatal(len(tasks), err)
		}
	}
}
