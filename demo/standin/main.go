// Command standin is a stand-in model CLI for the demo and for trying
// collab without a real model. It reads the prompt on standard input (and
// ignores it), reads the message it is answering from the tree through the
// variables the watcher sets (docs/protocol.md#the-model-run), and answers by a fixed rule:
//
//   - a person's message (hops 0) that says "ask NAME" is passed on to NAME
//     with an @mention;
//   - a person's message otherwise gets a friendly echo;
//   - an agent asking this one directly (an @mention) gets a short review;
//   - anything else (thanks, acknowledgements) gets NO_REPLY, which tells the
//     watcher that no reply is needed.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/collabdev/collab/internal/plumbing/tree"
)

func main() {
	prompt, _ := io.ReadAll(os.Stdin)
	// A workflow agent NAME--INSTANCE is @NAME in its channel.
	me, _, _ := strings.Cut(os.Getenv("COLLAB_AGENT"), "--")
	root := tree.Root(os.Getenv("COLLAB_ROOT"))
	path := filepath.Join(root.Channel(os.Getenv("COLLAB_CHANNEL")), os.Getenv("COLLAB_MESSAGE_ID")+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(1)
	}
	var m struct {
		From    string `json:"from"`
		Content struct {
			Text string `json:"text"`
		} `json:"content"`
		Metadata struct {
			Hops int `json:"hops"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		fmt.Fprintln(os.Stderr, "standin:", err)
		os.Exit(1)
	}
	fmt.Println(answer(me, m.From, m.Content.Text, m.Metadata.Hops, len(prompt)))
}

var (
	mention = regexp.MustCompile(`@([A-Za-z0-9_][A-Za-z0-9_-]*)`)
	ask     = regexp.MustCompile(`(?i)\bask @?([A-Za-z0-9_][A-Za-z0-9_-]*)`)
)

func answer(me, from, text string, hops, promptLen int) string {
	mentionsMe := false
	for _, m := range mention.FindAllStringSubmatch(text, -1) {
		mentionsMe = mentionsMe || strings.EqualFold(m[1], me)
	}
	switch a := ask.FindStringSubmatch(text); {
	case hops == 0 && a != nil && !strings.EqualFold(a[1], me):
		return fmt.Sprintf("@%s, %s would like your review: %q (%s, stand-in model; the prompt was %d bytes)", a[1], from, text, me, promptLen)
	case hops == 0:
		return fmt.Sprintf("Hello %s, %s here (a stand-in model; the prompt was %d bytes). You said: %q", from, me, promptLen, text)
	case mentionsMe:
		return fmt.Sprintf("Looked at it: fine by me. (%s, stand-in model)", me)
	default:
		return "NO_REPLY"
	}
}
