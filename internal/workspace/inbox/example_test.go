package inbox_test

import (
	"fmt"
	"os"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
	"github.com/collabdev/collab/internal/workspace/inbox"
)

func Example() {
	root, _ := os.MkdirTemp("", "collab")
	defer os.RemoveAll(root)
	w := &channel.Writer{Root: tree.Root(root)}
	w.Post(&channel.Message{SessionID: "dev", From: "claude", To: "codex", Content: channel.Content{Text: "please review"}})
	w.Post(&channel.Message{SessionID: "ops", From: "gemini", To: "all", Content: channel.Content{Text: "@codex the deploy is blocked"}})

	in, err := inbox.New(tree.Root(root), "codex", inbox.Options{})
	if err != nil {
		panic(err)
	}
	items, _ := in.Check() // shows and acknowledges
	for _, it := range items {
		fmt.Println(it.Channel, it.Priority, it.Message.Content.Text)
	}
	items, _ = in.Check()
	fmt.Println(len(items), "unread")
	// Unordered output:
	// dev normal please review
	// ops high @codex the deploy is blocked
	// 0 unread
}
