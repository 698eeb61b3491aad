package channel_test

import (
	"fmt"
	"log"
	"os"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/plumbing/tree"
)

// Post a message into a channel, then read the channel with a Reader: the
// first Scan returns every message, later ones only what is new.
func Example() {
	dir, err := os.MkdirTemp("", "collab-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	root := tree.Root(dir)

	w := &channel.Writer{Root: root}
	for _, m := range []channel.Message{
		{SessionID: "general", From: "claude", To: "codex", Content: channel.Content{Text: "codex, please review the patch"}},
		{SessionID: "general", From: "codex", Content: channel.Content{Text: "@claude looks good"}},
	} {
		if err := w.Post(&m); err != nil {
			log.Fatal(err)
		}
	}

	r, err := channel.NewReader(root, "general", channel.Cursor{}, channel.ReaderOptions{})
	if err != nil {
		log.Fatal(err)
	}
	msgs, _, err := r.Scan()
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Printf("%s → %s: %s (for claude: %v)\n", m.From, m.To, m.Content.Text, m.IsFor("claude"))
	}
	msgs, _, _ = r.Scan()
	fmt.Println("new on the second scan:", len(msgs))
	// Output:
	// claude → codex: codex, please review the patch (for claude: false)
	// codex → all: @claude looks good (for claude: true)
	// new on the second scan: 0
}
