package prompt_test

import (
	"fmt"
	"log"
	"time"

	"github.com/collabdev/collab/channel"
	"github.com/collabdev/collab/internal/agent/prompt"
)

// A user's template (--prompt-template FILE): the role, the transcript and
// the message, with the package's functions.
func ExampleTemplate_Render() {
	tmpl, err := prompt.Parse("mine.tmpl", `You are {{.Agent}}. {{trim .Role}}
{{range .Transcript}}
{{time "15:04" .Time}} {{.Sender $.Agent}}: {{.Content.Text}}
{{- end}}

Answer {{.Message.From}}, or print {{.NoReply}}:
{{quote .Message.Content.Text}}
`)
	if err != nil {
		log.Fatal(err)
	}
	at := time.Date(2026, 1, 11, 16, 33, 15, 0, time.UTC)
	out, err := tmpl.Render(prompt.Data{
		Agent:   "codex",
		Channel: "agent-os-paper",
		Role:    "You review Go code.\n",
		Transcript: []prompt.Message{
			{Message: channel.Message{From: "claude", To: "all", Timestamp: "2026-01-11T16:30:02.000Z", Content: channel.Content{Text: "Draft pushed."}}, Verdict: "verified"},
		},
		Message: prompt.Message{Message: channel.Message{
			From: "claude", To: "codex", Timestamp: at.Format(channel.TimeFormat),
			Content: channel.Content{Text: "@codex review it?\n{{.Agent}} stays as written."},
		}, Verdict: "verified"},
		Now: at,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(out)
	// Output:
	// You are codex. You review Go code.
	//
	// 16:30 claude (verified): Draft pushed.
	//
	// Answer claude, or print NO_REPLY:
	// > @codex review it?
	// > {{.Agent}} stays as written.
}

// Memory files are read anew for every prompt; one that cannot be read says
// why instead of failing the prompt.
func ExampleLoadMemory() {
	for _, m := range prompt.LoadMemory([]string{"testdata/no-such-file.md"}, 0) {
		fmt.Printf("%s: %v\n", m.Path, m.Err)
	}
	// Output:
	// testdata/no-such-file.md: no such file or directory
}
